"""Deterministic clocks and arrivals for the checkpoint tests (imported by test modules)."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from runtime.checkpoint.batching import BatchLimits, Envelope
from runtime.checkpoint.intake import Intake
from tests.support.waiting import wait_until


class FakeClock:
    """A monotonic clock that only moves when a scripted wait moves it."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@dataclass(frozen=True)
class ScriptedWait:
    """One wait of the writer: when, for how long (None: until notified), how many
    envelopes had arrived by then, and a tag a test sets to attribute it to a batch."""

    at: float
    timeout: float | None
    arrived: int
    tag: int


class ScriptedArrivals:
    """Envelopes arrive at scripted times on a FakeClock, queued into an intake while its
    writer waits. A wait that no arrival ends moves the clock by its whole timeout; one that
    an arrival ends moves the clock to the arrival and queues everything due by then.
    """

    def __init__(self, limits: BatchLimits, script: Iterable[tuple[float, Envelope]] = ()) -> None:
        self.clock = FakeClock()
        self.intake = Intake(limits, self.clock, self._wait)
        self._pending: deque[tuple[float, Envelope]] = deque(script)
        self.arrived_at: list[float] = []
        self.waits: list[ScriptedWait] = []
        self.tag = 0
        self._deliver_due()

    def next_batch(self, timeout: float | None = None) -> list[Envelope] | None:
        batch = self.intake.next_batch(timeout)
        if batch is not None:
            self.intake.end_turn()
        return batch

    def timed_waits(self) -> list[ScriptedWait]:
        return [w for w in self.waits if w.timeout is not None]

    def _wait(self, timeout: float | None) -> None:
        now = self.clock.now
        self.waits.append(ScriptedWait(now, timeout, len(self.arrived_at), self.tag))
        if self._pending and (timeout is None or self._pending[0][0] <= now + timeout):
            self.clock.now = max(now, self._pending[0][0])
            self._deliver_due()
        elif timeout is None:
            raise RuntimeError("ScriptedArrivals: the writer would wait forever")
        else:
            self.clock.now = now + timeout

    def _deliver_due(self) -> None:
        while self._pending and self._pending[0][0] <= self.clock.now:
            _, envelope = self._pending.popleft()
            self.arrived_at.append(self.clock.now)
            self.intake.put(envelope)


def wait_for_arrivals(intake: Intake, count: int, timeout: float = 10.0) -> None:
    """Block until `count` envelopes have been queued (threads under test are racing)."""
    arrived = f"{count} envelopes to arrive"
    wait_until(lambda: intake.arrivals >= count, timeout, interval=0.001, message=arrived)


def in_thread(call: Callable[[], object], name: str = "workflow-thread") -> BaseException | None:
    """Run `call` in a new (non-main) thread, as a worker's pool thread would; return what
    it raised, if anything."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            call()
        except BaseException as exc:  # handed to the test, which checks what it was
            raised.append(exc)

    thread = threading.Thread(target=run, name=name)
    thread.start()
    thread.join(10)
    if thread.is_alive():
        raise TimeoutError(f"{name} did not finish")
    return raised[0] if raised else None
