"""Where checkpoints wait for the sink, and whose turn it is to write them.

Checkpoints queue in one FIFO backlog. One thread at a time holds the sink's turn, takes a
batch from the front of the backlog and writes it, so batches are written in queue order and
writes stay serialized. Two kinds of thread take turns:

- a caller blocked on a synchronous checkpoint *leads*: when the sink is free it takes the
  turn at once and writes everything queued up to its checkpoint in its own thread. A single
  workflow thread then pays no thread switch per step, only its commit. The main thread
  leads with its signal handlers held (runtime.checkpoint.held_signals);
- the writer thread takes every other turn: synchronous checkpoints that arrived while the
  sink was busy, and asynchronous ones whose wait for company is over.

The rule this module exists for: a batch is due at once when the backlog holds a synchronous
checkpoint (someone is blocked on it); only an asynchronous-only backlog waits for company,
and no longer than ``BatchLimits.async_window`` after its oldest checkpoint was queued.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

from runtime.checkpoint.batching import BatchLimits, Envelope, EnvelopeKind

IDLE_LOOK = 1.0  # seconds between the writer's looks at the backlog when nothing wakes it


class Backlog:
    """Queued envelopes in FIFO order and what the prompt-flush rule asks of them. Not locked."""

    __slots__ = ("_bytes", "_items", "_urgent")

    def __init__(self) -> None:
        self._items: deque[tuple[float, Envelope]] = deque()
        self._urgent = 0  # queued envelopes someone is blocked on
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._items)

    def push(self, envelope: Envelope, at: float) -> None:
        # Counted before appended: an exception between the two (a signal handler's, in the
        # main thread) leaves the counts too high, which only makes the batch due early.
        self._urgent += envelope.sync
        self._bytes += envelope.size
        self._items.append((at, envelope))

    def due(self, now: float, limits: BatchLimits) -> bool:
        """Whether the front batch should be written now rather than wait for company."""
        if not self._items:
            return False
        return (
            self._urgent > 0
            or len(self._items) >= limits.max_items
            or self._bytes >= limits.max_bytes
            or self.deadline(limits) <= now
        )

    def deadline(self, limits: BatchLimits) -> float:
        """When the oldest envelope's wait for company ends (the backlog must not be empty)."""
        return self._items[0][0] + limits.async_window

    def take(self, limits: BatchLimits, *, until_stop: bool) -> list[Envelope]:
        """Remove and return the front batch within the limits; an oversize envelope goes
        alone. With ``until_stop`` the batch ends before a STOP marker instead of taking it."""
        batch: list[Envelope] = []
        nbytes = 0
        items = self._items
        max_items, max_bytes = limits.max_items, limits.max_bytes
        while items and len(batch) < max_items:
            envelope = items[0][1]
            stop = envelope.kind is EnvelopeKind.STOP
            if stop and until_stop:
                break
            size = envelope.size
            if batch and nbytes + size > max_bytes:
                break
            items.popleft()
            batch.append(envelope)
            nbytes += size
            self._urgent -= envelope.sync
            self._bytes -= size
            if stop or size > max_bytes:
                break
        if not items:
            self._urgent = self._bytes = 0  # whatever an interrupted push left behind
        return batch

    def take_all(self) -> list[Envelope]:
        batch = [envelope for _, envelope in self._items]
        self._items.clear()
        self._urgent = self._bytes = 0
        return batch


class Intake:
    """The backlog behind a lock, and the sink's turn. Thread-safe.

    ``clock`` returns monotonic seconds. ``wait`` blocks the writer thread (the lock held,
    as ``Condition.wait`` expects) until notified or for at most the given seconds; tests
    inject both to script arrivals on a fake clock. ``timed_waits`` counts
    the writer's waits for company: the regression tests prove none starts while a
    synchronous checkpoint is queued.
    """

    def __init__(
        self,
        limits: BatchLimits,
        clock: Callable[[], float] = time.monotonic,
        wait: Callable[[float], object] | None = None,
    ) -> None:
        self.limits = limits
        self._clock = clock
        # Entered as the C-level lock itself, not through the Condition's Python __enter__:
        # an exception a signal handler raises in the main thread cannot leave it held.
        # Reentrant so that a scripted `wait` may queue arrivals while it is held.
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._wait = wait or self._cond.wait
        self._backlog = Backlog()
        self._turn_taken = False
        # When the writer thread, waiting, will look at the backlog again by itself.
        self._writer_looks_at: float | None = None
        self._arrivals = 0  # envelopes ever queued, and how many the writer has seen
        self._arrivals_seen = 0
        self.timed_waits = 0

    @property
    def arrivals(self) -> int:
        """How many envelopes were ever queued."""
        return self._arrivals

    def put(self, envelope: Envelope) -> None:
        """Queue an envelope for the writer thread, waking it only if it must act sooner."""
        with self._lock:
            now = self._queue(envelope)
            if self._turn_taken:
                return  # whoever holds the turn hands the backlog on when it ends
            looks_at = self._writer_looks_at
            if (
                self._backlog.due(now, self.limits)
                or looks_at is None
                or looks_at > (now + self.limits.async_window)
            ):
                self._cond.notify()

    def lead_with(self, *envelopes: Envelope) -> list[Envelope] | None:
        """Queue synchronous envelopes, one after another; if the sink is free, take the turn
        and return the first batch to write (it may end before them when limits cut it)."""
        with self._lock:
            for envelope in envelopes:
                self._queue(envelope)
            return self._take_turn(until_stop=True)

    def lead(self) -> list[Envelope] | None:
        """Take the turn and the next batch if the sink is free and a batch is due."""
        with self._lock:
            if not self._backlog.due(self._clock(), self.limits):
                return None
            return self._take_turn(until_stop=True)

    def next_batch(self, timeout: float | None = None) -> list[Envelope] | None:
        """The writer thread's turn: block until a batch is due and the sink is free, then
        take both. Returns ``None`` if that did not happen within ``timeout`` seconds."""
        with self._lock:
            give_up = None if timeout is None else self._clock() + timeout
            while True:
                now = self._clock()
                if not self._turn_taken and self._backlog.due(now, self.limits):
                    return self._take_turn(until_stop=False)
                if give_up is not None and now >= give_up:
                    return None
                # Never wait without a bound: a wake-up lost to an exception in the middle of
                # a main-thread put costs at most IDLE_LOOK seconds.
                look_at = now + IDLE_LOOK if give_up is None else min(give_up, now + IDLE_LOOK)
                if not self._turn_taken and self._backlog:
                    # An asynchronous-only backlog: wait for company, up to its deadline.
                    self.timed_waits += 1
                    look_at = min(look_at, self._backlog.deadline(self.limits))
                elif not self._backlog and self._arrivals != self._arrivals_seen:
                    # Checkpoints keep coming: look again within a window anyway, so that an
                    # asynchronous one queued meanwhile need not wake this thread.
                    look_at = min(look_at, now + self.limits.async_window)
                self._arrivals_seen = self._arrivals
                self._writer_looks_at = look_at
                try:
                    self._wait(max(0.0, look_at - now))
                finally:
                    self._writer_looks_at = None

    def end_turn(self) -> None:
        """Give the sink's turn back; the writer thread takes over any backlog left."""
        with self._lock:
            self._turn_taken = False
            if self._backlog:
                self._cond.notify()

    def take_all(self) -> list[Envelope]:
        """Remove everything queued (the writer is dying and fails it all)."""
        with self._lock:
            return self._backlog.take_all()

    def _queue(self, envelope: Envelope) -> float:
        now = self._clock()
        self._backlog.push(envelope, now)
        self._arrivals += 1
        return now

    def _take_turn(self, *, until_stop: bool) -> list[Envelope] | None:
        """Take the turn with the front batch; callers stop short of the STOP marker, which
        only the writer thread takes (None when that leaves nothing to write)."""
        if self._turn_taken:
            return None
        batch = self._backlog.take(self.limits, until_stop=until_stop)
        if not batch:
            return None
        self._turn_taken = True
        return batch
