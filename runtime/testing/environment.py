"""`WorkflowEnvironment`: runs, branches, children, schedules and tasks of a test, in-process.

Entered, it installs a virtual clock (`time_skipping=True`) that every durable timer reads, a
dispatcher that keeps messages in virtual time, and the body and workflow stand-ins of its
mocks. Waiting on the environment (`env.run`, `run.wait()`, `env.run_until_blocked`) runs due
work on the calling thread; while the test waits and nothing can move, the clock jumps to the
earliest pending timer. Nothing needs a broker or a worker; wall time is never slept.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Any

from runtime import dispatch
from runtime.core import wait_driver
from runtime.core.clock import Clock, FakeClock, SystemClock, install_clock
from runtime.core.errors import RunNotFound
from runtime.core.waiting import Waiting
from runtime.durable.body import install_body_substitute
from runtime.handles import RunHandle, get_run, start
from runtime.leases.keepers import branch_leases, run_leases
from runtime.leases.liveness import release_process_liveness
from runtime.registry import WorkflowFunction
from runtime.registry.stand_ins import install_workflow_substitute
from runtime.schedules import sync_schedules
from runtime.selectors import waiting_on
from runtime.store import writer
from runtime.store.connection import commits_without_flush
from runtime.store.messaging.stream_slots import close_slot_session
from runtime.streaming.wakeups import stop_listening
from runtime.testing.driver import Driver, VirtualDispatcher
from runtime.testing.mocks import UNSET, Outcome, StepMocks, WorkflowMocks, target_of
from runtime.testing.outside import OutsideWorld
from runtime.testing.seams import use_writer


class RunBlocked(TimeoutError):
    """The run waited on cannot move: no timer is pending and it waits for the outside world."""


class WorkflowEnvironment(OutsideWorld):
    """A context manager; see the module. `wall_timeout` bounds each wait in wall seconds.

    `schedules` are the scheduled workflows whose ticks fire as the virtual clock moves (none
    unless named): a project's every-second schedule would otherwise start a run per virtual
    second of every skip, in every test."""

    def __init__(
        self,
        time_skipping: bool = True,
        *,
        start_at: datetime | None = None,
        wall_timeout: float = 60.0,
        schedules: Iterable[WorkflowFunction[..., Any] | str] = (),
    ) -> None:
        self.time_skipping = time_skipping
        moment = start_at or datetime.now(UTC).replace(microsecond=0)
        self.clock: Clock = FakeClock(moment) if time_skipping else SystemClock()
        self.dispatcher = VirtualDispatcher(self.clock)
        ticking = tuple(s if isinstance(s, str) else s.name for s in schedules)
        self.driver = Driver(self.clock, self.dispatcher, wall_timeout, ticking)
        self.step_mocks = StepMocks()
        self.workflow_mocks = WorkflowMocks()
        self._restore: list[Any] = []
        self._stack = ExitStack()
        self._entered = False

    def __enter__(self) -> WorkflowEnvironment:
        if self._entered:
            raise RuntimeError("a WorkflowEnvironment is entered once")
        self._entered = True
        self._restore = [
            install_clock(self.clock),
            dispatch.install(self.dispatcher),
            install_body_substitute(self.step_mocks),
            install_workflow_substitute(self.workflow_mocks),
            wait_driver.install_driver(self._drive_run),
        ]
        # A fresh checkpoint writer (closed, drained, at the exit), on connections that
        # commit without waiting for the disk.
        self._stack.enter_context(commits_without_flush())
        # Every checkpoint committed on the test's one thread of work, before it goes on.
        self._stack.enter_context(use_writer(async_window=0.0, inline=True))
        if self.driver.schedules:
            sync_schedules(self.clock.now())
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stack.close()
        clock, dispatcher, body, workflow, driver = self._restore
        wait_driver.install_driver(driver)
        install_workflow_substitute(workflow)
        install_body_substitute(body)
        dispatch.install(dispatcher)
        install_clock(clock)

    # Time

    def now(self) -> datetime:
        """The environment's time (what `ctx.now()` returns in its runs)."""
        return self.clock.now()

    def skip(self, delta: timedelta | float) -> datetime:
        """Move the clock by `delta` (a timedelta or seconds), firing every timer that falls
        due on the way at its own time; returns the new time."""
        seconds = delta.total_seconds() if isinstance(delta, timedelta) else float(delta)
        if seconds < 0:
            raise ValueError("the clock does not go back")
        target = self.clock.now() + timedelta(seconds=seconds)
        self.driver.advance_to(target)
        return self.clock.now()

    # Runs

    def start(
        self, workflow: str | WorkflowFunction[..., Any], *args: Any, **kwargs: Any
    ) -> RunHandle:
        """Start a run as `runtime.start` does (same options); returns its handle. Nothing runs
        until the test waits on the environment."""
        return start(workflow, *args, **kwargs)

    def run(self, workflow: str | WorkflowFunction[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Start a run and wait for it: its result, or what `RunHandle.wait()` raises."""
        return self.start(workflow, *args, **kwargs).wait()

    def run_until_blocked(self, run: RunHandle | uuid.UUID | str) -> Waiting | None:
        """Run everything due until run `run` finishes or cannot move without time passing or
        the outside world; returns what it waits for (None once finished)."""
        run_id = _run_id(run)
        self.driver.drive(run_id, False, None)
        return waiting_on(run_id)

    def settle(self) -> None:
        """Run everything that is due now, of every run; the clock stays."""
        self.driver.settle()

    def handle(self, run_id: uuid.UUID | str) -> RunHandle:
        return get_run(run_id)

    # Mocks

    def mock_step(
        self, step: Any, *, returns: Any = UNSET, raises: Any = UNSET, side_effect: Any = UNSET
    ) -> None:
        """Replace the body of `step` (a step, a Django task used as a step, a function or a
        registered name) for this environment: return `returns`, raise `raises`, or call
        `side_effect` (a function of the step's arguments, or a list of outcomes used one per
        call). The history records what the mock gave; a raising mock is retried by the
        step's own retry policy."""
        self.step_mocks.add(target_of(step), Outcome(returns, raises, side_effect))

    def mock_workflow(
        self,
        workflow: Any,
        *,
        returns: Any = UNSET,
        raises: Any = UNSET,
        side_effect: Any = UNSET,
    ) -> None:
        """Replace workflow `workflow`'s code in every run of it (a child's, typically) with
        a stand-in called without `ctx`: as `mock_step`."""
        self.workflow_mocks.add(target_of(workflow), Outcome(returns, raises, side_effect))

    def calls(self, what: Any) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
        """Each call of step `what`'s body, real or mocked, retries and fan-out branches
        included, as `(args, kwargs)` in call order (for a mocked workflow, its runs')."""
        target = target_of(what)
        return self.step_mocks.calls(target) + self.workflow_mocks.calls(target)

    def _drive_run(
        self, run_id: uuid.UUID, timeout: float | None, until: Callable[[], bool] | None = None
    ) -> None:
        done = self.driver.drive(run_id, self.time_skipping, timeout, until)
        if not done:
            waiting = waiting_on(run_id)
            what = "finish" if until is None else "answer the update"
            raise RunBlocked(
                f"run {run_id} cannot {what}: it waits for {_describe(waiting)} and no timer "
                "is pending (deliver it with the environment: post_callback, send, ...)"
            )


def release_connections() -> None:
    """Close the connections this process's runtime keeps beside Django's (its liveness lock,
    lease renewals, stream listener and slots, the process writer): before a test database
    is dropped. Each opens again on its next use."""
    writer().close()
    run_leases.stop()
    branch_leases.stop()
    release_process_liveness()
    stop_listening()
    close_slot_session()


def _run_id(run: RunHandle | uuid.UUID | str) -> uuid.UUID:
    if isinstance(run, RunHandle):
        return run.id
    try:
        return run if isinstance(run, uuid.UUID) else uuid.UUID(str(run))
    except ValueError:
        raise RunNotFound(f"no run has the id {run!r}") from None


def _describe(waiting: Waiting | None) -> str:
    if waiting is None:
        return "nothing it can be given"
    return waiting.kind + (f" {waiting.name!r}" if waiting.name else "")
