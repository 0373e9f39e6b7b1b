"""The broker queue's depth counts every priority: on Redis, every one of kombu's lists."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis
from celery import current_app

from runtime.core.branch_dispatch import BranchDispatch
from runtime.dispatch import CeleryDispatcher
from tests.support.services import REDIS, purge_broker_queue, queued_lists, require


@pytest.fixture
def empty_queue() -> Iterator[None]:
    require(REDIS, "Redis")
    purge_broker_queue()
    yield
    purge_broker_queue()


def test_queue_depth_counts_messages_of_every_priority(empty_queue: None) -> None:
    dispatcher = CeleryDispatcher()
    assert dispatcher.queue_depth() == 0
    for priority in (0, 5, 9):
        dispatcher.publish_branches(uuid.uuid4(), 1, [BranchDispatch(1, 1)], priority)
    dispatcher.enqueue_run(uuid.uuid4(), priority=3)
    assert dispatcher.queue_depth() == 4
    url = str(current_app.conf.broker_url)
    if url.startswith("redis"):
        client = redis.Redis.from_url(url)
        lengths = {key: client.llen(key) for key in queued_lists()}
        # 9 - priority: a run of priority 9 goes into the list workers read first.
        queue = current_app.conf.task_default_queue
        assert {k: n for k, n in lengths.items() if n} == {
            queue: 1,
            f"{queue}:4": 1,
            f"{queue}:6": 1,
            f"{queue}:9": 1,
        }
