"""A run's priority (0-9, higher first) as each broker's message priority."""

from __future__ import annotations

import uuid

import pytest

from runtime.core.branch_dispatch import BranchDispatch
from runtime.dispatch import branch_message, broker_priority


@pytest.mark.parametrize("url", ["amqp://guest@localhost//", "pyamqp://h//", "amqps://h//"])
def test_broker_priority_amqp_keeps_the_scale(url: str) -> None:
    # RabbitMQ delivers a higher number first; a message without one counts as 0.
    assert [broker_priority(url, p) for p in range(10)] == list(range(10))


@pytest.mark.parametrize(
    "url", ["redis://127.0.0.1:6379/0", "rediss://h:6380/1", "sentinel://h:26379", "REDIS://h"]
)
def test_broker_priority_redis_reverses_the_scale(url: str) -> None:
    # kombu's Redis transport reads its priority lists lowest number first.
    assert [broker_priority(url, p) for p in range(10)] == [9, 8, 7, 6, 5, 4, 3, 2, 1, 0]


def test_broker_priority_redis_gives_priority_zero_a_level_too() -> None:
    # Without one kombu files a message as its highest priority, ahead of priority 9 runs.
    assert broker_priority("redis://h", 0) == 9


@pytest.mark.parametrize("url", ["memory://localhost/", "", "sqs://h"])
def test_broker_priority_none_where_the_broker_has_none(url: str) -> None:
    assert broker_priority(url, 9) is None
    assert broker_priority(url, 0) is None


@pytest.mark.parametrize("priority", [-1, 10])
def test_broker_priority_refuses_what_is_off_the_scale(priority: int) -> None:
    with pytest.raises(ValueError, match="priority"):
        broker_priority("redis://h", priority)


def test_broker_priority_branch_message_carries_the_run_priority() -> None:
    run_id = uuid.uuid4()
    message = branch_message(run_id, 3, BranchDispatch(4, 1), 7, broker_priority("redis://h", 7))
    assert message.args == [str(run_id), 4, 1, 3]
    assert message.kwargs == {"priority": 7}  # what the branch publishes in turn gets it
    assert message.routing.priority == 2


def test_broker_priority_branch_message_of_a_plain_run_is_unchanged() -> None:
    message = branch_message(uuid.uuid4(), 3, BranchDispatch(4, 1, poll=2))
    assert message.kwargs == {}
    assert message.routing.priority is None
    assert message.args[-1] == 2
