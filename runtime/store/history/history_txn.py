"""The transaction path of the checkpoint sink: a batch's run parts inside one transaction, on
any database Django runs.

It is the path for SQLite, for batches with fan-out reports or guards the one-statement path
does not take, and for a batch the PostgreSQL path rolled back: here a failed guard is named
exactly (lease lost, run finished, step changed); a suspend that a wake-up raced is not a
failure: its writes commit, and its run's wake-ups come back. Each part's run is updated first
(its guard checked, its seqs allocated), then the same statements as the one-statement path's
(runtime.store.history.history_rows) write the rows; on PostgreSQL they go in one pipeline.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from django.db import connection

from runtime.core.errors import LeaseLost, RunAlreadyFinished, StepChanged
from runtime.core.writes import LeaseGuard, OpenStepGuard, UnfinishedGuard
from runtime.models import Step, StepStatus
from runtime.store.dialect import Statement, execute
from runtime.store.history import history_rows
from runtime.store.history.parts import STEP_UPDATE_FIELDS, RunPart
from runtime.store.messaging.streams import append_chunks_txn, notify_run
from runtime.store.runs.run_updates import run_update_statement


def write_parts_txn(
    parts: list[RunPart], now: datetime, check_at: datetime
) -> dict[uuid.UUID, int]:
    """Write the parts' runs, steps, events, fan-out groups and stream chunks (inside the
    caller's transaction); new fan-out groups are first looked at by the sweep at `check_at`.
    Returns the runs whose suspend a wake-up had raced (not applied), with their wake-ups."""
    steps: list[Statement] = []
    events: list[Statement] = []
    groups: list[Statement] = []
    woken: dict[uuid.UUID, int] = {}
    for part in parts:
        last_seq, wakeups = _update_run(part, now)
        if part.suspend_lost(wakeups):
            woken[part.run_id] = wakeups
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
    return woken


def _update_run(part: RunPart, now: datetime) -> tuple[int, int]:
    """Allocate `len(part.events)` seqs, apply the patch and the guard; returns the last_seq
    and the wake-ups."""
    guard = part.guard
    if isinstance(guard, OpenStepGuard):
        # The step itself is checked after this UPDATE holds the run's row lock.
        guard = LeaseGuard(guard.token) if guard.token else UnfinishedGuard()
    sql, params = run_update_statement(
        guard, len(part.events), part.wakes, part.patch, now, run_id=part.run_id,
        suspend=part.suspend,
    )  # fmt: skip
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        raise _guard_failure(part)
    return int(row[0]), int(row[1])


def _check_step_open(run_id: uuid.UUID, guard: OpenStepGuard) -> None:
    # A fresh statement under the run's row lock: it sees every write committed before ours.
    open_steps = Step.objects.filter(run_id=run_id, id=guard.step_id).unfinished()
    if guard.due_by is not None:
        open_steps = open_steps.filter(wake_at__lte=guard.due_by)
    if not open_steps.exists():
        raise StepChanged(f"step {guard.step_id} has finished or its deadline moved")


def _guard_failure(part: RunPart) -> Exception:
    guard = part.guard
    if isinstance(guard, OpenStepGuard):
        if guard.token is None:
            return RunAlreadyFinished(f"run {part.run_id} has already finished")
        return LeaseLost(f"this executor no longer owns run {part.run_id}")
    if isinstance(guard, UnfinishedGuard):
        return RunAlreadyFinished(f"run {part.run_id} has already finished")
    return LeaseLost(f"this executor no longer owns run {part.run_id}")
