"""An in-memory transport for tests: records every request and fails on demand.

fake = FakeTransport()
fake.fail_messages("run-1:step-2:1", retryable=False)
publish_messages(messages, fake)          # raises PublishError, 1 failed
publish_messages(messages, fake.send_only())   # same fake, without send_batch
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from publisher.errors import describe
from publisher.messages import Message, Outcome


@dataclass(frozen=True)
class FakeRequest:
    """One call the fake received: ``send`` or ``send_batch``, and its messages."""

    kind: Literal["send", "send_batch"]
    messages: tuple[Message, ...]


class FakeTransport:
    """A batch transport that keeps messages in memory.

    Messages must be JSON (as on a real broker); the message id is the idempotency key.
    ``delivered`` lists the messages it accepted, in the order they arrived.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: list[FakeRequest] = []
        self.delivered: list[Message] = []
        self._failing: dict[str, bool] = {}
        self._deferring: set[str] = set()
        self._request_errors: list[Exception] = []
        self._miscounts: list[int] = []

    def fail_messages(self, *keys: str, retryable: bool = True) -> None:
        """Fail the messages with these idempotency keys, every time they are sent."""
        with self._lock:
            self._failing.update(dict.fromkeys(keys, retryable))

    def defer_messages(self, *keys: str) -> None:
        """Accept these messages with a deferred outcome (neither id nor error)."""
        with self._lock:
            self._deferring.update(keys)

    def fail_next_request(self, error: Exception | None = None) -> None:
        """Make the next call raise ``error`` (default ``ConnectionError``), sending nothing."""
        with self._lock:
            self._request_errors.append(error or ConnectionError("fake broker unreachable"))

    def miscount_next_batch(self, delta: int) -> None:
        """Make the next ``send_batch`` return ``delta`` outcomes more (or fewer) than messages."""
        with self._lock:
            self._miscounts.append(delta)

    def send_only(self) -> SendOnlyTransport:
        """A view of this fake without ``send_batch``, sharing its records and failures."""
        return SendOnlyTransport(self)

    def send(self, message: Message) -> Outcome:
        """Deliver one message, or fail as configured."""
        return self._receive("send", [message])[0]

    def send_batch(self, messages: Sequence[Message]) -> list[Outcome]:
        """Deliver messages in one request, or fail as configured."""
        outcomes = self._receive("send_batch", messages)
        with self._lock:
            delta = self._miscounts.pop(0) if self._miscounts else 0
        if delta < 0:
            return outcomes[:delta]
        return outcomes + [Outcome.sent("unexpected")] * delta

    def _receive(
        self, kind: Literal["send", "send_batch"], messages: Sequence[Message]
    ) -> list[Outcome]:
        with self._lock:
            self.requests.append(FakeRequest(kind, tuple(messages)))
            if self._request_errors:
                raise self._request_errors.pop(0)
            return [self._accept(message) for message in messages]

    def _accept(self, message: Message) -> Outcome:
        key = message.idempotency_key
        if key in self._failing:
            return Outcome.failure(f"fake failure for {key}", retryable=self._failing[key])
        try:
            json.dumps([message.args, message.kwargs, message.headers])
        except (TypeError, ValueError) as exc:
            return Outcome.failure(describe(exc), retryable=False)
        self.delivered.append(message)
        return Outcome.deferred() if key in self._deferring else Outcome.sent(key)


class SendOnlyTransport:
    """A ``FakeTransport`` seen through ``send`` alone, as a transport without batches."""

    def __init__(self, fake: FakeTransport) -> None:
        self.fake = fake

    def send(self, message: Message) -> Outcome:
        """Deliver one message through the underlying fake."""
        return self.fake.send(message)
