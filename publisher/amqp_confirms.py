"""Publisher confirms on AMQP (RabbitMQ): one broker outcome per message of a batch.

A batch is published on a channel in confirm mode without waiting per message; then the
broker's `basic.ack` / `basic.nack` frames (by delivery tag, possibly `multiple`) settle the
batch's messages, and a `basic.return` (a message published `mandatory` that no queue took)
fails its message. A nack, a return or no confirm within the timeout is a failed entry,
retryable: the idempotency key makes a republish recognisable.

The channel is the transport's own, not one of Celery's producer pool: delivery tags count
every publish on a channel, so nothing else may publish on it. One batch at a time uses it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

from kombu import Connection, Producer

from publisher.messages import IDEMPOTENCY_HEADER, Outcome

CONFIRM_TIMEOUT = 10.0  # seconds a batch waits for its confirms before failing what is left


class ConfirmedChannel:
    """A channel in confirm mode and the outcome of every delivery tag published on it."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        channel: Any = connection.channel()  # py-amqp's channel: confirms and events
        channel.confirm_select()
        channel.events["basic_ack"].add(self._on_ack)
        channel.events["basic_nack"].add(self._on_nack)
        channel.events["basic_return"].add(self._on_return)
        self.channel = channel
        self.producer = Producer(self.channel)
        self._last_tag = 0
        self._pending: dict[int, str] = {}  # delivery tag -> idempotency key
        self._settled: dict[int, str | None] = {}  # tag -> None (acked) or why it failed
        self._returned: dict[str, str] = {}  # idempotency key -> why the broker returned it

    def published(self, key: str) -> int:
        """Record that the message with `key` was just published; returns its delivery tag."""
        self._last_tag += 1
        self._pending[self._last_tag] = key
        return self._last_tag

    def outcomes(self, tags: list[int | None], timeout: float = CONFIRM_TIMEOUT) -> list[Outcome]:
        """Wait for the confirms of `tags` (None: a message that was never published)."""
        deadline = time.monotonic() + timeout
        waiting = {tag for tag in tags if tag is not None}
        while waiting - set(self._settled):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                self.connection.drain_events(timeout=min(remaining, 1.0))
            except TimeoutError:
                continue
        return [self._outcome(tag) for tag in tags if tag is not None]

    def _outcome(self, tag: int) -> Outcome:
        key = self._pending.pop(tag, "")
        if tag not in self._settled:
            return Outcome.failure("the broker did not confirm the message in time", retryable=True)
        failed = self._settled.pop(tag)
        returned = self._returned.pop(key, None)
        if returned is not None:
            return Outcome.failure(f"returned by the broker: {returned}", retryable=True)
        if failed is not None:
            return Outcome.failure(failed, retryable=True)
        return Outcome.sent(key)

    def _settle(self, tag: int, multiple: bool, failure: str | None) -> None:
        tags = [t for t in self._pending if t <= tag] if multiple else [tag]
        for t in tags:
            self._settled.setdefault(t, failure)

    def _on_ack(self, delivery_tag: int, multiple: bool) -> None:
        self._settle(delivery_tag, multiple, None)

    def _on_nack(self, delivery_tag: int, multiple: bool) -> None:
        self._settle(delivery_tag, multiple, "nacked by the broker")

    def _on_return(self, exc: Exception, exchange: str, routing_key: str, message: Any) -> None:
        headers = getattr(message, "headers", None) or {}
        key = headers.get(IDEMPOTENCY_HEADER)
        if key:
            self._returned[str(key)] = f"{exc} (exchange {exchange!r}, key {routing_key!r})"

    def close(self) -> None:
        with suppress(Exception):  # a broken connection has nothing left to release
            self.connection.release()


class ConfirmedChannels:
    """One `ConfirmedChannel` per process, rebuilt after fork or after it broke."""

    def __init__(self, connect: Any) -> None:
        self._connect = connect
        self._lock = threading.Lock()
        self._channel: ConfirmedChannel | None = None
        self._pid = 0

    @contextmanager
    def acquire(self) -> Iterator[ConfirmedChannel]:
        """The channel, for one batch at a time; dropped if the batch raised."""
        with self._lock:
            stale = self._channel is not None and not self._channel.connection.connected
            if self._channel is None or stale or self._pid != os.getpid():
                self._channel = ConfirmedChannel(self._connect())
                self._pid = os.getpid()
            channel = self._channel
            try:
                yield channel
            except BaseException:
                channel.close()
                self._channel = None
                raise
