"""The transaction path of the checkpoint sink: a batch's run parts inside one transaction, on
any database Django runs.

It is the path for SQLite, for batches with fan-out reports or guards the one-statement path
does not take, and for a batch the PostgreSQL path rolled back: here a failed guard is named
exactly (lease lost, run finished, step changed, woken up). Each part's run is updated first
(its guard checked, its seqs allocated), then the same statements as the one-statement path's
(runtime.store.history.history_rows) write the rows; on PostgreSQL they go in one pipeline.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from django.db import connection

from runtime.core.errors import LeaseLost, RunAlreadyFinished, StepChanged, WokenUp
from runtime.core.writes import LeaseGuard, OpenStepGuard, SuspendGuard, UnfinishedGuard
from runtime.models import Run, Step, StepStatus
from runtime.store.dialect import Statement, execute
from runtime.store.history import history_rows
from runtime.store.history.parts import STEP_UPDATE_FIELDS, RunPart
from runtime.store.messaging.streams import append_chunks_txn, notify_run
from runtime.store.runs.run_statements import run_update_statement


def write_parts_txn(parts: list[RunPart], now: datetime, check_at: datetime) -> None:
    """Write the parts' runs, steps, events, fan-out groups and stream chunks (inside the
    caller's transaction); new fan-out groups are first looked at by the sweep at `check_at`."""
    steps: list[Statement] = []
    events: list[Statement] = []
    groups: list[Statement] = []
    for part in parts:
        last_seq = _update_run(part, now)
        if isinstance(part.guard, OpenStepGuard):
            _check_step_open(part.run_id, part.guard)
        if part.steps:
            rows = list(part.steps.values())
            steps += history_rows.steps_statements(part.run_id, rows, STEP_UPDATE_FIELDS)
        if part.events:
            events += history_rows.events_statements(part.run_id, part.events, last_seq)
        if part.fanouts:
            groups.append(history_rows.fanout_groups_statement(part.run_id, part.fanouts, check_at))
    execute(steps)
    # After the upserts: a step row written earlier in this batch is cancelled too.
    cancelled = [part.run_id for part in parts if part.cancel_open_steps]
    if cancelled:
        Step.objects.filter(run_id__in=cancelled).unfinished().update(
            status=StepStatus.CANCELLED, finished_at=now
        )
    execute(events + groups)
    for part in parts:
        if part.chunks:
            append_chunks_txn(part.run_id, part.chunks, now)
        elif part.announce:  # the chunks notify already; on PostgreSQL it leaves at commit
            notify_run(part.run_id)


def _update_run(part: RunPart, now: datetime) -> int:
    """Allocate `len(part.events)` seqs, apply the patch and the guard; returns the last_seq."""
    guard = part.guard
    if isinstance(guard, OpenStepGuard):
        # The step itself is checked after this UPDATE holds the run's row lock.
        guard = LeaseGuard(guard.token) if guard.token else UnfinishedGuard()
    sql, params = run_update_statement(
        guard, len(part.events), part.wakes, part.patch, now, run_id=part.run_id
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        raise _guard_failure(part)
    return int(row[0])


def _check_step_open(run_id: uuid.UUID, guard: OpenStepGuard) -> None:
    # A fresh statement under the run's row lock: it sees every write committed before ours.
    open_steps = Step.objects.filter(run_id=run_id, id=guard.step_id).unfinished()
    if guard.due_by is not None:
        open_steps = open_steps.filter(wake_at__lte=guard.due_by)
    if not open_steps.exists():
        raise StepChanged(f"step {guard.step_id} has finished or its deadline moved")


def suspend_failure(part: RunPart) -> Exception | None:
    """Why a lone suspend (`part`: a run patch under a SuspendGuard, nothing else) that a
    PostgreSQL fast path rolled back failed, read in one statement instead of writing it again
    in a transaction: WokenUp (with the wake-ups read) or LeaseLost; None when neither (the
    transaction path names the failure)."""
    guard = part.guard
    if not isinstance(guard, SuspendGuard) or part.events or part.steps or part.fanouts:
        return None
    if part.chunks or part.wakes or part.cancel_open_steps:
        return None
    row = Run.objects.filter(id=part.run_id).values_list("lease_token", "wakeups").first()
    if row is None or row[0] != guard.token:
        return LeaseLost(f"this executor no longer owns run {part.run_id}")
    if row[1] != guard.wakeups:
        return WokenUp(f"run {part.run_id} was woken while suspending", wakeups=row[1])
    return None


def _guard_failure(part: RunPart) -> Exception:
    guard = part.guard
    if isinstance(guard, OpenStepGuard):
        if guard.token is None:
            return RunAlreadyFinished(f"run {part.run_id} has already finished")
        return LeaseLost(f"this executor no longer owns run {part.run_id}")
    if isinstance(guard, UnfinishedGuard):
        return RunAlreadyFinished(f"run {part.run_id} has already finished")
    if isinstance(guard, SuspendGuard):
        still_ours = Run.objects.filter(id=part.run_id, lease_token=guard.token).exists()
        if still_ours:
            return WokenUp(f"run {part.run_id} was woken while suspending")
    return LeaseLost(f"this executor no longer owns run {part.run_id}")
