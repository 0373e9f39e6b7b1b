"""Partial failures, failed requests, miscounted outcomes and deferred messages."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from publisher.core import publish_messages
from publisher.errors import PublishError
from publisher.fake import FakeTransport
from publisher.messages import Message, Outcome, Routing
from publisher.metrics import counters

MakeMessages = Callable[..., list[Message]]


def test_publish_messages_reports_partial_failure_with_every_outcome(
    fake: FakeTransport, make_messages: MakeMessages
) -> None:
    messages = make_messages(140)
    fake.fail_messages("m3", "m70", "m139", retryable=False)

    with pytest.raises(PublishError, match="3 of 140 messages failed to publish") as caught:
        publish_messages(messages, fake)

    error = caught.value
    assert (error.failed, error.total, error.retryable) == (3, 140, False)
    assert [i for i, o in enumerate(error.outcomes) if not o.ok] == [3, 70, 139]
    assert error.outcomes[4] == Outcome.sent("m4")
    assert counters.snapshot().failures == 3


def test_publish_messages_is_retryable_if_any_failure_is(
    fake: FakeTransport, make_messages: MakeMessages
) -> None:
    fake.fail_messages("m1", retryable=False)
    fake.fail_messages("m2", retryable=True)

    with pytest.raises(PublishError) as caught:
        publish_messages(make_messages(5), fake)

    assert caught.value.retryable is True
    assert caught.value.failed == 2


@pytest.mark.parametrize(
    ("error", "retryable"),
    [
        (ConnectionError("refused"), True),
        (TimeoutError("slow"), True),
        (TypeError("not JSON"), False),
    ],
)
def test_publish_messages_turns_a_failed_request_into_failed_outcomes(
    fake: FakeTransport, make_messages: MakeMessages, error: Exception, retryable: bool
) -> None:
    first, second = Routing(queue="first"), Routing(queue="second")
    messages = make_messages(3, first, "a") + make_messages(2, second, "b")
    fake.fail_next_request(error)

    with pytest.raises(PublishError, match="3 of 5 messages failed") as caught:
        publish_messages(messages, fake)

    failed = caught.value.outcomes[:3]
    assert all(not o.ok and o.retryable is retryable for o in failed)
    assert type(error).__name__ in (failed[0].error or "")
    assert all(o.ok for o in caught.value.outcomes[3:])
    assert caught.value.retryable is retryable
    assert counters.snapshot().failed_requests == 1


@pytest.mark.parametrize(("delta", "returned"), [(-3, 97), (2, 102)])
def test_publish_messages_refuses_a_miscounted_batch(
    fake: FakeTransport, make_messages: MakeMessages, delta: int, returned: int
) -> None:
    fake.miscount_next_batch(delta)

    with pytest.raises(PublishError) as caught:
        publish_messages(make_messages(140), fake, batch_size=100)

    error = caught.value
    assert f"transport returned {returned} outcomes for 100 messages" in str(error)
    assert "100 of 140 messages failed" in str(error)
    assert error.retryable is True
    assert all(not o.ok and o.retryable for o in error.outcomes[:100])
    assert all(o.ok for o in error.outcomes[100:])


def test_publish_messages_counts_deferred_outcomes_as_success(
    fake: FakeTransport, make_messages: MakeMessages
) -> None:
    fake.defer_messages("m0", "m2")

    outcomes = publish_messages(make_messages(3), fake)

    assert outcomes == [Outcome.deferred(), Outcome.sent("m1"), Outcome.deferred()]
    assert all(o.ok for o in outcomes)


def test_publish_messages_fails_a_message_that_is_not_json_alone(
    fake: FakeTransport, make_messages: MakeMessages
) -> None:
    messages = [*make_messages(2), Message("tests.task", "bad", args=[{1, 2}])]

    with pytest.raises(PublishError, match="1 of 3") as caught:
        publish_messages(messages, fake)

    assert caught.value.retryable is False
    assert [m.idempotency_key for m in fake.delivered] == ["m0", "m1"]
