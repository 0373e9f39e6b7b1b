"""CeleryTransport against real Redis: one pipeline per batch, task ids = keys, order kept."""

from __future__ import annotations

import json
from typing import Any

import pytest
import redis
from celery import Celery
from pipeline_spy import PipelineSpy

from publisher.celery_transport import CeleryTransport
from publisher.core import publish_messages
from publisher.errors import PublishError
from publisher.messages import IDEMPOTENCY_HEADER, Message, Routing
from publisher.metrics import counters

pytestmark = pytest.mark.redis

QUEUE = "publisher-it"


def make_messages(count: int) -> list[Message]:
    return [
        Message("tests.work", f"run-1:step-{i}:1", args=[i], routing=Routing(QUEUE))
        for i in range(count)
    ]


def queued(client: redis.Redis, queue: str = QUEUE) -> list[dict[str, Any]]:
    """The queue's messages, oldest first (kombu LPUSHes and workers BRPOP)."""
    return [json.loads(raw) for raw in reversed(client.lrange(queue, 0, -1))]


def test_celery_transport_sends_64_messages_in_one_pipeline(
    app: Celery, redis_client: redis.Redis, pipelines: PipelineSpy
) -> None:
    messages = make_messages(64)

    outcomes = publish_messages(messages, CeleryTransport(app))

    assert [len(p) for p in pipelines.publishes] == [64]
    assert counters.snapshot().requests == 1
    keys = [m.idempotency_key for m in messages]
    assert [o.message_id for o in outcomes] == keys
    on_queue = queued(redis_client)
    assert [m["headers"]["id"] for m in on_queue] == keys
    assert [m["headers"][IDEMPOTENCY_HEADER] for m in on_queue] == keys
    assert {m["headers"]["task"] for m in on_queue} == {"tests.work"}
    assert {m["content-type"] for m in on_queue} == {"application/json"}


def test_publish_messages_splits_140_messages_into_100_and_40(
    app: Celery, redis_client: redis.Redis, pipelines: PipelineSpy
) -> None:
    messages = make_messages(140)

    publish_messages(messages, CeleryTransport(app), batch_size=100)

    assert [len(p) for p in pipelines.publishes] == [100, 40]
    assert counters.snapshot().batch_sizes == {40: 1, 100: 1}
    on_queue = [m["headers"]["id"] for m in queued(redis_client)]
    assert on_queue == [m.idempotency_key for m in messages]


def test_celery_transport_splits_an_oversized_batch_itself(
    app: Celery, redis_client: redis.Redis, pipelines: PipelineSpy
) -> None:
    messages = make_messages(140)

    outcomes = CeleryTransport(app, batch_size=100).send_batch(messages)

    assert [len(p) for p in pipelines.publishes] == [100, 40]
    assert all(o.ok for o in outcomes)
    assert len(queued(redis_client)) == 140


def test_celery_transport_raises_when_nothing_was_sent(
    app: Celery, redis_client: redis.Redis, pipelines: PipelineSpy
) -> None:
    pipelines.fail_publish.add(0)

    with pytest.raises(PublishError, match="64 of 64") as caught:
        publish_messages(make_messages(64), CeleryTransport(app))

    assert caught.value.retryable is True
    assert "BatchPublishError" in (caught.value.outcomes[0].error or "")
    assert queued(redis_client) == []


def test_celery_transport_keeps_ids_of_batches_sent_before_a_failure(
    app: Celery, redis_client: redis.Redis, pipelines: PipelineSpy
) -> None:
    pipelines.fail_publish.add(1)

    outcomes = CeleryTransport(app, batch_size=100).send_batch(make_messages(240))

    assert all(o.ok for o in outcomes[:100])
    assert all(not o.ok and o.retryable for o in outcomes[100:])
    assert [len(p) for p in pipelines.publishes] == [100]
    assert len(queued(redis_client)) == 100


def test_celery_transport_routes_priorities_to_their_own_lists(
    app: Celery, redis_client: redis.Redis, pipelines: PipelineSpy
) -> None:
    urgent = [Message("tests.work", f"u{i}", routing=Routing(QUEUE, priority=9)) for i in range(3)]

    publish_messages([*make_messages(3), *urgent], CeleryTransport(app))

    assert [len(p) for p in pipelines.publishes] == [3, 3]
    assert [m["headers"]["id"] for m in queued(redis_client)] == [
        f"run-1:step-{i}:1" for i in range(3)
    ]
    priority_lists = [key for key in redis_client.keys(f"{QUEUE}*") if key != QUEUE.encode()]
    assert len(priority_lists) == 1
    assert [m["headers"]["id"] for m in queued(redis_client, priority_lists[0].decode())] == [
        "u0",
        "u1",
        "u2",
    ]


def test_celery_transport_carries_the_tasks_ignore_result_flag(
    app: Celery, redis_client: redis.Redis
) -> None:
    @app.task(name="tests.quiet", ignore_result=True)
    def quiet() -> None: ...

    messages = [
        Message("tests.quiet", "quiet-1", routing=Routing(QUEUE)),
        Message("tests.work", "work-1", routing=Routing(QUEUE)),
    ]

    publish_messages(messages, CeleryTransport(app))

    flags = {m["headers"]["id"]: m["headers"]["ignore_result"] for m in queued(redis_client)}
    assert flags == {"quiet-1": True, "work-1": bool(app.conf.task_ignore_result)}
