"""A transport without send_batch gets concurrent single sends."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from publisher.core import publish_messages
from publisher.errors import PublishError
from publisher.fake import FakeTransport
from publisher.messages import Message, Outcome, Routing
from publisher.metrics import counters

MakeMessages = Callable[..., list[Message]]


def test_publish_messages_falls_back_to_single_sends_in_order(
    fake: FakeTransport, make_messages: MakeMessages
) -> None:
    messages = make_messages(30, Routing(queue="q"))

    outcomes = publish_messages(messages, fake.send_only(), batch_size=10)

    assert [o.message_id for o in outcomes] == [f"m{i}" for i in range(30)]
    assert {r.kind for r in fake.requests} == {"send"}
    assert len(fake.requests) == 30
    assert counters.snapshot().batch_sizes == {1: 30}


def test_publish_messages_sends_singles_concurrently(make_messages: MakeMessages) -> None:
    # Four sends that each wait for the other three can only finish if they run together.
    barrier = threading.Barrier(4, timeout=5)

    class Rendezvous:
        def send(self, message: Message) -> Outcome:
            barrier.wait()
            return Outcome.sent(message.idempotency_key)

    outcomes = publish_messages(make_messages(4), Rendezvous(), max_workers=4)

    assert [o.message_id for o in outcomes] == ["m0", "m1", "m2", "m3"]


def test_publish_messages_reports_failed_single_sends(
    fake: FakeTransport, make_messages: MakeMessages
) -> None:
    fake.fail_messages("m5", retryable=True)

    with pytest.raises(PublishError, match="1 of 8") as caught:
        publish_messages(make_messages(8), fake.send_only())

    assert caught.value.retryable is True
    assert not caught.value.outcomes[5].ok
