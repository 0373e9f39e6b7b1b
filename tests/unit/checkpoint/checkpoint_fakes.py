"""Deterministic queues and clocks for the checkpoint tests (imported by test modules)."""

from __future__ import annotations

import queue
import threading
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from runtime.checkpoint.batching import Envelope


class FakeClock:
    """A monotonic clock that only moves when a fake queue waits."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@dataclass(frozen=True)
class TimedGet:
    """One blocking ``get(timeout=...)``: when, how long, and how many items were out."""

    at: float
    timeout: float
    delivered: int
    tag: int


class ScriptedQueue:
    """Items arrive at scripted times on a FakeClock; a timed get that finds nothing
    moves the clock by its whole timeout, one that an arrival ends moves it to the arrival.
    """

    def __init__(self, clock: FakeClock, script: Iterable[tuple[float, Envelope]] = ()) -> None:
        self._clock = clock
        self._pending: deque[tuple[float, Envelope]] = deque(script)
        self.delivered_at: list[float] = []
        self.timed_gets: list[TimedGet] = []
        self.tag = 0  # set by a test to attribute timed gets to one collect() call

    def put(self, item: Envelope, /) -> None:
        self._pending.append((self._clock.now, item))

    def get_nowait(self) -> Envelope:
        return self.get(block=False)

    def get(self, block: bool = True, timeout: float | None = None) -> Envelope:
        if self._pending and self._pending[0][0] <= self._clock.now:
            return self._deliver()
        if not block:
            raise queue.Empty
        if timeout is None:
            if not self._pending:
                raise RuntimeError("ScriptedQueue: get() would block forever")
            self._clock.now = self._pending[0][0]
            return self._deliver()
        self.timed_gets.append(TimedGet(self._clock.now, timeout, len(self.delivered_at), self.tag))
        if self._pending and self._pending[0][0] <= self._clock.now + timeout:
            self._clock.now = self._pending[0][0]
            return self._deliver()
        self._clock.now += timeout
        raise queue.Empty

    def _deliver(self) -> Envelope:
        _, item = self._pending.popleft()
        self.delivered_at.append(self._clock.now)
        return item


class CountingQueue:
    """A real ``SimpleQueue`` that counts puts (waitable) and timed gets."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[Envelope] = queue.SimpleQueue()
        self._puts_changed = threading.Condition()
        self.puts = 0
        self.timed_gets = 0

    def put(self, item: Envelope, /) -> None:
        self._queue.put(item)
        with self._puts_changed:
            self.puts += 1
            self._puts_changed.notify_all()

    def get(self, block: bool = True, timeout: float | None = None) -> Envelope:
        if block and timeout is not None:
            self.timed_gets += 1
        return self._queue.get(block, timeout)

    def get_nowait(self) -> Envelope:
        return self._queue.get_nowait()

    def wait_for_puts(self, count: int, timeout: float = 10.0) -> None:
        with self._puts_changed:
            if not self._puts_changed.wait_for(lambda: self.puts >= count, timeout):
                raise TimeoutError(f"only {self.puts} of {count} puts arrived")
