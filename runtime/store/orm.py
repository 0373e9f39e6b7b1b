"""The portable write path: one batch in one ORM transaction, on any database Django runs.

It is the path for SQLite, for batches with fan-out reports or guards the one-statement path
does not take, and for a batch the PostgreSQL path rolled back: here a failed guard is named
exactly (lease lost, run finished, step changed, woken up).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import connection

from runtime.core.errors import LeaseLost, RunAlreadyFinished, StepChanged, WokenUp
from runtime.core.writes import LeaseGuard, OpenStepGuard, SuspendGuard, UnfinishedGuard
from runtime.models import Event, Run, Step, StepStatus
from runtime.store.dialect import uuid_param
from runtime.store.parts import STEP_UPDATE_FIELDS, RunPart
from runtime.store.runs import run_update_statement


def write_parts_txn(parts: list[RunPart], now: datetime) -> None:
    """Write the parts' runs, steps and events (inside the caller's transaction)."""
    events: list[Event] = []
    steps: list[Step] = []
    for part in parts:
        last_seq = _update_run(part, now)
        if isinstance(part.guard, OpenStepGuard):
            _check_step_open(part.guard)
        seq = last_seq - len(part.events)
        for draft in part.events:
            seq += 1
            events.append(
                Event(
                    run_id=part.run_id,
                    seq=seq,
                    type=draft.type,
                    step_id=draft.step_id,
                    payload=draft.payload,
                    created_at=draft.at,
                )
            )
        steps.extend(Step.from_row(part.run_id, row) for row in part.steps.values())
    if steps:
        Step.objects.bulk_create(
            steps,
            update_conflicts=True,
            unique_fields=["run", "position"],
            update_fields=list(STEP_UPDATE_FIELDS),
        )
    # After the upserts: a step row written earlier in this batch is cancelled too.
    cancelled = [part.run_id for part in parts if part.cancel_open_steps]
    if cancelled:
        Step.objects.filter(run_id__in=cancelled).unfinished().update(
            status=StepStatus.CANCELLED, finished_at=now
        )
    if events:
        Event.objects.bulk_create(events)


def _json_param(column: str, value: Any) -> Any:
    return Run._meta.get_field(column).get_db_prep_value(value, connection)  # type: ignore[union-attr]


def _update_run(part: RunPart, now: datetime) -> int:
    """Allocate `len(part.events)` seqs, apply the patch and the guard; returns the last_seq."""
    guard = part.guard
    if isinstance(guard, OpenStepGuard):
        # The step itself is checked after this UPDATE holds the run's row lock.
        guard = LeaseGuard(guard.token) if guard.token else UnfinishedGuard()
    sql, params = run_update_statement(
        guard,
        len(part.events),
        part.wakes,
        part.patch,
        now,
        json_param=_json_param,
        run_param=uuid_param(part.run_id),
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        raise _guard_failure(part)
    return int(row[0])


def _check_step_open(guard: OpenStepGuard) -> None:
    # A fresh statement under the run's row lock: it sees every write committed before ours.
    open_steps = Step.objects.filter(id=guard.step_id).unfinished()
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
    if isinstance(guard, SuspendGuard):
        still_ours = Run.objects.filter(id=part.run_id, lease_token=guard.token).exists()
        if still_ours:
            return WokenUp(f"run {part.run_id} was woken while suspending")
    return LeaseLost(f"this executor no longer owns run {part.run_id}")
