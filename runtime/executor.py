"""Executing a run: claim its lease, replay its history through the workflow, settle it.

`execute(run_id)` is what the Celery task calls. It is safe to call any number of times for
the same run at once: only the holder of the lease writes, and every write is fenced by it.
"""

from __future__ import annotations

import enum
import logging
import secrets
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager, suppress
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.db import InterfaceError, OperationalError

from runtime import conf
from runtime.checkpoint.errors import CheckpointFailed
from runtime.core.clock import Clock, current_clock, current_time
from runtime.core.control import Abort, Suspend
from runtime.core.errors import LeaseLost, describe_exception
from runtime.core.history import RecordedStep
from runtime.core.jsonvalues import checked
from runtime.core.writes import HistoryWrite, RunPatch, SuspendGuard
from runtime.dispatch import enqueue_run
from runtime.durable import run_ends
from runtime.durable.callbacks import expire_due_callbacks, next_callback_deadline
from runtime.durable.run_marks import announce_start, settle
from runtime.durable.session import ExecutionSession
from runtime.flow.admission import run_finished
from runtime.leases.keepers import run_leases
from runtime.leases.liveness import process_key
from runtime.models import RunStatus
from runtime.observe import metrics
from runtime.observe.attempts import RunPass
from runtime.registry import registry
from runtime.registry.stand_ins import workflow_code
from runtime.store import writer
from runtime.store.lifecycle.leases import give_back_run_lease
from runtime.store.runs.run_statements import RunClaim, load_history
from runtime.streaming.writer import WorkflowScope, workflow_scope
from runtime.versions import routing as version_routing
from runtime.warm import passes as warm_passes
from runtime.warm.cache import WarmRun, warm_runs
from runtime.workflow_call import WorkflowContext, call_workflow

log = logging.getLogger("fanfold.executor")


class ExecutionOutcome(enum.Enum):
    SKIPPED = "skipped"  # not ours to run: finished, or another executor holds the lease
    COMPLETED = "completed"
    FAILED = "failed"
    SUSPENDED = "suspended"
    LOST = "lost"  # the lease was lost mid-way (cancelled or taken over)


@dataclass(frozen=True)
class Execution:
    outcome: ExecutionOutcome
    wake_at: datetime | None = None


def execute(run_id: uuid.UUID, clock: Clock | None = None) -> Execution:
    """Run (or resume) `run_id` until it finishes, suspends, or loses its lease."""
    token = secrets.token_hex(16)
    found = warm_passes.claim(run_id, token, current_time(), process_key(), _code_of)
    if found is None:
        return Execution(ExecutionOutcome.SKIPPED)
    run_leases.hold(token)
    claimed, history, warm = found
    return execute_claimed(run_id, token, claimed, history, clock=clock, warm=warm)


def execute_claimed(
    run_id: uuid.UUID,
    token: str,
    claimed: RunClaim,
    history: dict[int, RecordedStep] | None,
    clock: Clock | None = None,
    warm: WarmRun | None = None,
) -> Execution:
    """`execute` of a run whose lease `token` was taken (with its history) already, and is
    held in `run_leases`: released here (runtime.worker.run_batch claims a batch's at once).
    `warm`: the run's parked workflow, taken from this thread's warm cache (runtime.warm)."""
    version_routing.remember(run_id, claimed.app_version)
    if warm is None:
        warm_runs().discard(run_id)  # claimed with its whole history: a warm copy is stale
    clock = clock or current_clock()
    try:
        epoch = 0
        while True:
            session = ExecutionSession(run_id, token, epoch, writer(), claimed.priority)
            try:
                execution = _observed_pass(session, claimed, clock, history, warm)
                return _freeing_slot(run_id, claimed, execution)
            except _Replay as again:
                # A new pass goes on from the parked workflow, or reads the history anew.
                epoch, warm = epoch + 1, warm_passes.read_on(again.warm)
                history = None if warm is None else {}
                claimed = replace(claimed, status=RunStatus.RUNNING, wakeups=again.wakeups)
    finally:
        run_leases.release(token)


def _code_of(workflow: str) -> Callable[..., Any]:
    """The code this worker runs for `workflow` (`_unknown` for a workflow it does not know)."""
    known = registry.workflows.get(workflow)  # an unknown one fails in _invoke
    return workflow_code(workflow, known.fn) if known is not None else _unknown


def _freeing_slot(run_id: uuid.UUID, claimed: RunClaim, execution: Execution) -> Execution:
    # A finished run of a workflow with `concurrency` frees its slot: admit who is next.
    if execution.outcome in (ExecutionOutcome.COMPLETED, ExecutionOutcome.FAILED):
        ends = run_ends.current()
        if ends is None:
            run_finished(run_id, claimed.workflow)
        else:  # once its end is committed
            ends.after(run_id, partial(run_finished, run_id, claimed.workflow))
    return execution


def ends_together() -> AbstractContextManager[object]:
    """Runs executed inside the block do not wait for their ends' commits one by one: the
    block's end waits for all of them (runtime.durable.run_ends)."""
    return run_ends.together(_aborted)


class _Replay(Exception):
    def __init__(self, wakeups: int) -> None:
        self.wakeups = wakeups
        self.warm: WarmRun | None = None  # the workflow the pass parked, for the next one


def _observed_pass(
    session: ExecutionSession,
    claimed: RunClaim,
    clock: Clock,
    history: dict[int, RecordedStep] | None,
    warm: WarmRun | None,
) -> Execution:
    """One pass as metrics and spans see it; a pass that raises (a database failure the task
    retries) keeps the outcome "failed"."""
    with RunPass(session.run_id, claimed.workflow) as run_pass:
        try:
            execution = _execute_once(session, claimed, clock, history, warm)
        except _Replay:
            run_pass.outcome = "woken"  # a wake-up raced the suspend: the run replays at once
            raise
        run_pass.outcome = execution.outcome.value
        return execution


def _execute_once(
    session: ExecutionSession,
    claimed: RunClaim,
    clock: Clock,
    history: dict[int, RecordedStep] | None,
    warm: WarmRun | None,
) -> Execution:
    """One pass over the run's history (read with the claim, or now: None), or on from where
    its `warm` workflow parked."""
    fn = _code_of(claimed.workflow)
    passing = warm_passes.WarmPass(session.run_id, claimed, fn, warm)
    if history is None:
        history = load_history(session.run_id)
    ctx = passing.context(session, history, clock)
    if claimed.status == RunStatus.WAITING:
        metrics.resumed(claimed.workflow, passing.warm)
    try:
        announce_start(session, claimed.status, claimed.workflow, clock.now())
        expire_due_callbacks(ctx.cursor)  # time-outs are recorded when they happen
        result = passing.call(partial(_invoke, ctx, claimed, fn))
        if ctx.fatal is not None:
            raise ctx.fatal
        result, size = checked(result, "workflow result", conf.get().MAX_PAYLOAD_BYTES)
        settle(session, clock, "run_completed", RunStatus.COMPLETED, result=result, size=size)
        metrics.run_finished(claimed.workflow, RunStatus.COMPLETED)
        return Execution(ExecutionOutcome.COMPLETED)
    except Suspend as suspend:
        # The run wakes for its open callbacks' deadlines too, whatever it waits on now.
        wake_at = _earliest(suspend.wake_at, next_callback_deadline(ctx.cursor))
        try:
            execution = _suspend(session, claimed, wake_at, clock, passing.route())
        except _Replay as again:
            again.warm = passing.handover()
            raise
        if execution.outcome is ExecutionOutcome.SUSPENDED:
            passing.suspended()
        return execution
    except Abort as abort:
        return _aborted(session, abort.failure)
    except (KeyboardInterrupt, SystemExit):
        raise
    except (OperationalError, InterfaceError) as exc:
        # The database failed under the runtime itself (a read while replaying, a fan-out's
        # bookkeeping): that is no verdict on the workflow. Retry the task instead.
        failure = CheckpointFailed.caused_by(session.key, exc)
        return _aborted(session, failure)
    except BaseException as exc:
        return _failed(session, claimed, clock, ctx, exc)
    finally:
        passing.close()


def _failed(
    session: ExecutionSession,
    claimed: RunClaim,
    clock: Clock,
    ctx: WorkflowContext,
    exc: BaseException,
) -> Execution:
    if _continues_after(exc, ctx):
        log.info("run %s: soft time limit; continuing in a new pass", session.run_id)
        return _suspend(session, claimed, clock.now(), clock)
    error = describe_exception(ctx.fatal or exc)
    try:
        settle(session, clock, "run_failed", RunStatus.FAILED, error=error)
    except Abort as abort:
        return _aborted(session, abort.failure)
    metrics.run_finished(claimed.workflow, RunStatus.FAILED)
    return Execution(ExecutionOutcome.FAILED)


def _continues_after(exc: BaseException, ctx: WorkflowContext) -> bool:
    """Whether a run goes on in a new pass after `exc` ended this one: Celery's soft time limit
    bounds a pass, not the run, so what the pass recorded stays and a new pass continues by
    replay. A pass that recorded nothing new would only be cut again: that fails the run."""
    return (
        isinstance(exc, SoftTimeLimitExceeded)
        and ctx.fatal is None
        and ctx.cursor.went_past_history
    )


def _earliest(*moments: datetime | None) -> datetime | None:
    return min((m for m in moments if m is not None), default=None)


def _unknown(ctx: WorkflowContext) -> None:
    """Stands for a workflow this worker does not know until _invoke reports it."""


def _invoke(ctx: WorkflowContext, claimed: RunClaim, fn: Callable[..., Any]) -> Any:
    registry.workflow(claimed.workflow)  # raises WorkflowNotFound for an unknown one
    args = list(claimed.input.get("args", []))
    kwargs = dict(claimed.input.get("kwargs", {}))
    cursor = ctx.cursor
    with workflow_scope(WorkflowScope(cursor.run_id, lambda: cursor.position)):
        return call_workflow(fn, ctx, args, kwargs)


def _suspend(
    session: ExecutionSession,
    claimed: RunClaim,
    wake_at: datetime | None,
    clock: Clock,
    warm_queue: str | None = None,
) -> Execution:
    """Suspend the run until `wake_at` (None: until something wakes it); its resumes go to
    `warm_queue` first, the node that keeps it parked (None: to any worker)."""
    patch = RunPatch(
        status=RunStatus.WAITING, wake_at=wake_at, warm_queue=warm_queue, release_lease=True
    )
    guard = SuspendGuard(session.token, claimed.wakeups)
    try:
        # One commit with what led here: a suspend that loses the race with a wake-up leaves
        # them committed, and the run goes on at once in a new pass.
        woken = session.suspend(HistoryWrite(session.run_id, guard, run=patch))
    except Abort as abort:
        return _aborted(session, abort.failure)
    if woken is not None:
        raise _Replay(woken.wakeups)
    if wake_at is not None:
        delay = max((wake_at - clock.now()).total_seconds(), 0.0)
        enqueue_run(session.run_id, delay, priority=session.priority, queue=warm_queue)
    return Execution(ExecutionOutcome.SUSPENDED, wake_at)


def _aborted(session: ExecutionSession, failure: Exception) -> Execution:
    session.writer.reset_session(session.key)
    if isinstance(failure.__cause__, LeaseLost):
        log.info("run %s: lease lost (%s); stopping", session.run_id, failure.__cause__)
        return Execution(ExecutionOutcome.LOST)
    # A database failure: give the lease back so the Celery task's retry can claim the run at
    # once (instead of after the lease expires), then let the task retry.
    with suppress(Exception):
        give_back_run_lease(session.run_id, session.token)
    raise failure
