"""The in-process driver of a test environment: a virtual-time queue and the loop that empties it.

`VirtualDispatcher` keeps what the runtime sends, each message due at the environment's clock
plus its countdown. `Driver` runs what is due on the calling thread: queued messages first,
then any run the database says is due (a timer that fell, or a wake-up whose message went
nowhere, such as a start committed inside the test's own transaction). When nothing can move
and the caller allows it, the clock jumps to the earliest pending timer. Wall time is never
slept while the clock is virtual.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from runtime import executor
from runtime.core.branch_dispatch import BranchDispatch
from runtime.core.clock import Clock, FakeClock
from runtime.fanout import async_branches, chunk
from runtime.fanout.report import BranchAttempt
from runtime.schedules import tick_once
from runtime.store.flow.schedules import next_schedule_tick
from runtime.store.runs.due_runs import run_timers

# Deliveries at one instant of the clock after which a run is taken to loop without waiting.
MAX_DELIVERIES_AT_ONE_INSTANT = 10_000


@dataclass(frozen=True)
class Queued:
    """One kept message: a run's execution, or a branch attempt (`dispatch` set)."""

    due: datetime
    priority: int
    order: int
    run_id: uuid.UUID
    group_position: int = 0
    dispatch: BranchDispatch | None = None

    @property
    def child_poll(self) -> bool:
        return self.dispatch is not None and self.dispatch.poll > 0


class VirtualDispatcher:
    """A `runtime.dispatch.Dispatcher` whose countdowns run on `clock`."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.sent = 0
        self._queue: list[Queued] = []
        self._lock = threading.Lock()

    def enqueue_run(
        self,
        run_id: uuid.UUID,
        countdown: float | None = None,
        priority: int = 0,
        queue: str | None = None,  # one process: no worker node to route to
    ) -> None:
        due = self.clock.now() + timedelta(seconds=max(countdown or 0.0, 0.0))
        with self._lock:
            self.sent += 1
            self._queue.append(Queued(due, priority, self.sent, run_id))

    def publish_branches(
        self,
        run_id: uuid.UUID,
        group_position: int,
        dispatches: Sequence[BranchDispatch],
        priority: int = 0,
    ) -> None:
        now = self.clock.now()
        with self._lock:
            for d in dispatches:
                self.sent += 1
                due = now + timedelta(seconds=max(d.countdown, 0.0))
                self._queue.append(Queued(due, priority, self.sent, run_id, group_position, d))

    def queue_depth(self, queue: str | None = None) -> int | None:
        with self._lock:
            return len(self._queue)

    def take_due(self) -> Queued | None:
        """The next due message (highest priority, then first sent), removed from the queue;
        a run's other due executions go with it (one pass serves them all). Child polls are
        not taken here (`take_child_polls`)."""
        now = self.clock.now()
        with self._lock:
            due = [m for m in self._queue if m.due <= now and not m.child_poll]
            if not due:
                return None
            first = min(due, key=lambda m: (-m.priority, m.order))
            if first.dispatch is None:
                same = [m for m in due if m.dispatch is None and m.run_id == first.run_id]
                self._queue = [m for m in self._queue if m not in same]
            else:
                self._queue.remove(first)
            return first

    def take_child_polls(self) -> list[Queued]:
        """Every kept look at a child run (a fan-out branch's poll of its child), whenever
        due: removed from the queue."""
        with self._lock:
            polls = [m for m in self._queue if m.child_poll]
            self._queue = [m for m in self._queue if not m.child_poll]
        return polls

    def next_due(self) -> datetime | None:
        """The earliest kept message's time; child polls are no timers (a child moves by
        its own)."""
        with self._lock:
            return min((m.due for m in self._queue if not m.child_poll), default=None)


class Driver:
    """Runs due work on the calling thread; `auto_skip` moves a virtual clock when stuck."""

    def __init__(
        self,
        clock: Clock,
        dispatcher: VirtualDispatcher,
        wall_timeout: float,
        schedules: tuple[str, ...] = (),
    ) -> None:
        self.clock = clock
        self.schedules = schedules  # the workflows whose ticks fire as the clock moves
        self.dispatcher = dispatcher
        self.wall_timeout = wall_timeout
        self.delivered = 0
        self._next_wake: datetime | None = None  # as the last idle step saw it
        self._watched: uuid.UUID | None = None  # the run a wait is for
        self._watched_finished = False
        self._at_instant = (clock.now(), 0)

    @property
    def virtual(self) -> bool:
        return isinstance(self.clock, FakeClock)

    def drive(
        self,
        run_id: uuid.UUID,
        auto_skip: bool,
        timeout: float | None,
        until: Callable[[], bool] | None = None,
    ) -> bool:
        """Run due work until run `run_id` finished, or `until()` holds; then True. False when
        nothing can move any more (without moving the clock, unless `auto_skip`).
        TimeoutError after `timeout` (or the environment's) wall seconds."""
        limit = self.wall_timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        self._watched = run_id
        while True:
            if time.monotonic() > deadline:
                raise TimeoutError(f"runs still moving after {limit} s of wall time")
            if until is not None and until():
                return True
            if self._step():
                continue
            # Nothing is left to run now: the idle step read whether the run finished.
            if self._watched_finished or (until is not None and until()):
                return True
            if not auto_skip:
                return False
            wake = self._next_wake
            if wake is None:
                return False
            if not self._reach(wake, deadline):
                raise TimeoutError(f"the next timer ({wake.isoformat()}) is after the wait's end")

    def advance_to(self, target: datetime) -> None:
        """Move a virtual clock to `target`, firing every timer on the way at its own time."""
        if not isinstance(self.clock, FakeClock):
            raise RuntimeError("skip() needs a time-skipping environment")
        while True:
            self.settle()
            wake = _earliest(self._next_wake, self._next_tick())
            if wake is None or wake > target:
                break
            self._move(max(wake, self.clock.now()))
        self._move(max(target, self.clock.now()))
        self.settle()

    def settle(self) -> None:
        """Run everything due now (the clock stays)."""
        while self._step():
            pass

    def next_timer(self) -> datetime | None:
        """The earliest pending timer: a kept message's, or a run's."""
        queued, runs = self.dispatcher.next_due(), run_timers(self.clock.now()).next_wake
        return min((t for t in (queued, runs) if t is not None), default=None)

    def _next_tick(self) -> datetime | None:
        """A schedule's next tick: a timer `skip` fires at its time (auto-skip does not
        jump to ticks, or a test waiting on one run would tick its schedules on forever)."""
        return next_schedule_tick(list(self.schedules)) if self.schedules else None

    def _reach(self, wake: datetime, deadline: float) -> bool:
        if isinstance(self.clock, FakeClock):
            self._move(max(wake, self.clock.now()))
            return True
        wait = (wake - self.clock.now()).total_seconds()  # the wall clock: wait for it
        if time.monotonic() + wait > deadline:
            return False
        time.sleep(max(wait, 0.0))
        return True

    def _move(self, moment: datetime) -> None:
        if isinstance(self.clock, FakeClock) and moment != self.clock.now():
            self.clock.set(moment)
            if self.schedules:
                tick_once(moment, only=self.schedules)

    def _step(self) -> bool:
        """Deliver one due message, or execute the runs the database has due; False if none."""
        message = self.dispatcher.take_due()
        if message is not None:
            self._deliver(message)
            return True
        if not async_branches.drain(self.wall_timeout):
            raise TimeoutError(f"async branch bodies still running after {self.wall_timeout} s")
        now, queued = self.clock.now(), self.dispatcher.next_due()
        if queued is not None and queued <= now:
            return True  # an async branch's report sent something
        timers = run_timers(now, self._watched)
        self._watched_finished = timers.watched_finished
        self._next_wake = min((t for t in (queued, timers.next_wake) if t), default=None)
        # A child poll moves its fan-out only once the child finished: looked at when idle,
        # it counts as progress only then (a poll of a running child sends itself again).
        ran = False
        for poll in self.dispatcher.take_child_polls():
            ran = self._deliver(poll) != "polling" or ran
        for run_id in timers.due:
            self._count()
            ran = executor.execute(run_id).outcome != executor.ExecutionOutcome.SKIPPED or ran
        return ran

    def _deliver(self, message: Queued) -> str:
        self._count()
        if message.dispatch is None:
            return executor.execute(message.run_id).outcome.value
        d = message.dispatch
        first = BranchAttempt(
            message.run_id, d.position, d.attempt, message.group_position, message.priority
        )
        return chunk.run_message(first, d.count, d.poll)

    def _count(self) -> None:
        self.delivered += 1
        now = self.clock.now()
        instant, count = self._at_instant
        count = count + 1 if instant == now else 1
        self._at_instant = (now, count)
        if count > MAX_DELIVERIES_AT_ONE_INSTANT:
            raise RuntimeError(
                f"{count} executions at {now.isoformat()} without the clock moving: "
                "a workflow loops without waiting"
            )


def _earliest(*moments: datetime | None) -> datetime | None:
    return min((m for m in moments if m is not None), default=None)
