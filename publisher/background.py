"""`BackgroundPublisher`: messages handed over now, published by a thread of its own.

`submit` returns at once unless `max_pending` messages wait already (then it waits for room: a
publisher that falls behind holds its callers back instead of its messages for ever longer);
the thread, woken by the first message, publishes what is queued in requests of at most
`batch_size` (`publish_messages`), and takes whatever queued meanwhile as its next batch.
`flush()` waits until everything submitted before it was attempted, and a process that exits
flushes first (atexit). A failed batch goes to `on_failure` and is not tried again: submit
only messages that something else sends again when they are lost.

Two options shape a stream of submits. `combine` turns a batch taken off the queue into the
messages actually published (runtime.core.run_batches makes one message of many runs' starts);
`on_failure` still gets the submitted ones. `linger` paces a stream: a batch ready within
`linger` seconds of the previous request that carried several messages waits out the rest of
that time (unless `batch_size` messages are queued, or a `flush` waits), so that it takes more
messages with it; a message submitted after a quiet spell, or after a request of one message,
leaves at once. A message submitted as one of a `stream` (a run's start: a caller that does
not wait for it to be answered) starts that time even alone, so that the starts of a loop of
enqueues, each longer than a request, leave a few to a request rather than each on its own.
With `max_linger`, the pace of a stream that keeps its requests full of several doubles from
`linger` up to `max_linger` (a flood of starts goes in fewer, fuller requests), and falls back
to `linger` after a request of one message or a quiet spell (`next_pace`).
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence

from publisher.core import DEFAULT_BATCH_SIZE, publish_messages
from publisher.messages import Message
from publisher.transport import Transport

log = logging.getLogger("fanfold.publisher")

EXIT_FLUSH_SECONDS = 10.0

Failure = Callable[[Sequence[Message], Exception], None]
Combine = Callable[[list[Message]], list[Message]]


def next_pace(pace: float, gap: float, count: int, linger: float, max_linger: float) -> float:
    """A stream's linger after a request of `count` messages taken `gap` seconds after the
    start of the stream's request before it: doubled (up to `max_linger`) while the stream
    keeps its requests full of several, back to `linger` after a lone message or a quiet spell
    (a gap of more than twice the pace)."""
    if count < 2 or gap > 2 * pace:
        return linger
    return min(max(pace, linger) * 2, max_linger)


def _log_failure(messages: Sequence[Message], exc: Exception) -> None:
    log.warning("%d message(s) published in the background were lost: %s", len(messages), exc)


class BackgroundPublisher:
    """A queue of messages and the thread that publishes them in batches."""

    def __init__(
        self,
        transport: Callable[[], Transport],
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_pending: int = 2 * DEFAULT_BATCH_SIZE,
        on_failure: Failure = _log_failure,
        name: str = "fanfold-publisher",
        combine: Combine | None = None,
        linger: float = 0.0,
        max_linger: float | None = None,
    ) -> None:
        if batch_size < 1 or max_pending < 1:
            raise ValueError("batch_size and max_pending must be at least 1")
        if linger < 0:
            raise ValueError("linger must not be negative")
        if max_linger is not None and max_linger < linger:
            raise ValueError("max_linger must not be less than linger")
        self._combine = combine
        self.linger = linger
        self.max_linger = linger if max_linger is None else max_linger
        self._transport = transport
        self.batch_size = batch_size
        self.max_pending = max_pending
        self._on_failure = on_failure
        self._name = name
        self._pid = -1
        self._reset()

    def _reset(self) -> None:
        # A forked child has the queue but not the thread (nor a usable lock): it starts anew.
        self._pid = os.getpid()
        self._cond = threading.Condition()
        self._queue: deque[tuple[Message, bool]] = deque()  # and whether of a stream
        self._submitted = 0
        self._attempted = 0
        self._flushing = 0  # flush() calls waiting: no lingering while one does
        self._thread: threading.Thread | None = None

    def submit(self, message: Message, *, stream: bool = False) -> None:
        """Queue `message` for the thread; returns at once unless `max_pending` wait. With
        `stream`, its request begins a linger however few it carries."""
        if self._pid != os.getpid():
            self._reset()
        with self._cond:
            if self._thread is not None:
                self._cond.wait_for(lambda: self._submitted - self._attempted < self.max_pending)
            self._queue.append((message, stream))
            self._submitted += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
                atexit.register(self.flush, EXIT_FLUSH_SECONDS)
            # The thread waits for a first message, or lingers until `batch_size` are queued:
            # any other submit would wake it only to wait again (a thread switch per message).
            if len(self._queue) == 1 or len(self._queue) >= self.batch_size:
                self._cond.notify_all()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every message submitted so far was attempted; False on time-out."""
        if self._pid != os.getpid():
            return True  # submitted in the parent: not this process's to send
        with self._cond:
            target = self._submitted
            self._flushing += 1
            self._cond.notify_all()
            try:
                return self._cond.wait_for(lambda: self._attempted >= target, timeout)
            finally:
                self._flushing -= 1

    def pending(self) -> int:
        """Messages submitted and not attempted yet."""
        with self._cond:
            return self._submitted - self._attempted

    def _run(self) -> None:
        previous = float("-inf")  # when the previous request that carried several began
        pace = self.linger  # the stream's linger now: it grows while requests carry several
        while True:
            with self._cond:
                self._cond.wait_for(lambda: bool(self._queue))
                until = previous + pace
                while self._lingers() and (left := until - time.monotonic()) > 0:
                    self._cond.wait(left)
                count = min(len(self._queue), self.batch_size)
                taken = [self._queue.popleft() for _ in range(count)]
            batch = [message for message, _ in taken]
            # A lone message is no stream unless submitted as one: the next one leaves at once
            # too, as a caller waiting on each message's answer in turn needs (a run's resume).
            streamed = len(batch) > 1 or any(stream for _, stream in taken)
            gap = time.monotonic() - previous
            pace = next_pace(pace, gap, len(batch), self.linger, self.max_linger)
            previous = time.monotonic() if streamed else float("-inf")
            try:
                sent = batch if self._combine is None else self._combine(batch)
                publish_messages(sent, self._transport(), batch_size=self.batch_size)
            except Exception as exc:  # a PublishError, or the transport could not be made
                try:
                    self._on_failure(batch, exc)
                except Exception:
                    log.exception("on_failure of a background batch raised")
            finally:
                with self._cond:
                    self._attempted += len(batch)
                    self._cond.notify_all()

    def _lingers(self) -> bool:
        # Called holding the lock.
        return len(self._queue) < self.batch_size and not self._flushing
