"""Grouping by routing, splitting at the batch size, and keeping input order."""

from __future__ import annotations

import math
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from publisher.core import plan_requests, publish_messages
from publisher.fake import FakeTransport
from publisher.messages import Message, Routing
from publisher.metrics import counters

routings = st.builds(
    Routing,
    queue=st.sampled_from([None, "a", "b"]),
    priority=st.sampled_from([None, 0, 9]),
    routing_key=st.sampled_from([None, "rk"]),
)


@settings(max_examples=150, deadline=None)
@given(
    message_routings=st.lists(routings, max_size=60),
    batch_size=st.integers(min_value=1, max_value=12),
)
def test_publish_messages_groups_splits_and_keeps_order(
    message_routings: list[Routing], batch_size: int
) -> None:
    counters.reset()
    fake = FakeTransport()
    messages = [
        Message("tests.task", f"key-{i}", args=[i], routing=routing)
        for i, routing in enumerate(message_routings)
    ]

    outcomes = publish_messages(messages, fake, batch_size=batch_size)

    assert [outcome.message_id for outcome in outcomes] == [m.idempotency_key for m in messages]
    for request in fake.requests:
        assert len({message.routing for message in request.messages}) == 1
        assert 1 <= len(request.messages) <= batch_size
        assert request.kind == ("send" if len(request.messages) == 1 else "send_batch")
    sizes = Counter(message.routing for message in messages)
    expected_requests = sum(math.ceil(n / batch_size) for n in sizes.values())
    assert len(fake.requests) == expected_requests
    assert counters.snapshot().requests == expected_requests
    # Within one routing, messages leave in input order.
    for routing in sizes:
        sent = [m for r in fake.requests for m in r.messages if m.routing == routing]
        assert sent == [m for m in messages if m.routing == routing]


def test_plan_requests_splits_a_group_at_the_batch_size() -> None:
    a, b = Routing(queue="a"), Routing(queue="b")
    messages = [
        Message("t", f"k{i}", routing=routing) for i, routing in enumerate([a, b, a, a, b, a, a])
    ]

    assert plan_requests(messages, 2) == [[0, 2], [3, 5], [6], [1, 4]]


@pytest.mark.parametrize("batch_size", [0, -1])
def test_plan_requests_rejects_a_batch_size_below_one(batch_size: int) -> None:
    with pytest.raises(ValueError, match="batch_size"):
        plan_requests([], batch_size)


def test_publish_messages_sends_a_one_message_group_with_send(fake: FakeTransport) -> None:
    lonely = Message("t", "lonely", routing=Routing(queue="other"))
    crowd = [Message("t", f"c{i}", routing=Routing(queue="main")) for i in range(3)]

    publish_messages([*crowd, lonely], fake)

    assert [(r.kind, len(r.messages)) for r in fake.requests] == [("send_batch", 3), ("send", 1)]


def test_publish_messages_sends_nothing_for_empty_input(fake: FakeTransport) -> None:
    assert publish_messages([], fake) == []
    assert fake.requests == []
    assert counters.snapshot().requests == 0


def test_publish_messages_counts_requests_messages_and_sizes(fake: FakeTransport) -> None:
    messages = [Message("t", f"k{i}", routing=Routing(queue="q")) for i in range(250)]

    publish_messages(messages, fake, batch_size=100)

    snapshot = counters.snapshot()
    assert (snapshot.requests, snapshot.messages, snapshot.failures) == (3, 250, 0)
    assert snapshot.batch_sizes == {50: 1, 100: 2}
    assert snapshot.max_batch_size == 100
