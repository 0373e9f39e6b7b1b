"""Fan-in, database side: a batch of branch reports counted on their groups in one go.

`record_branch_writes_txn` runs inside `DatabaseSink`'s batch transaction (it assumes one) and
is set-based per batch, whatever its size: per run one `UPDATE` that takes the run's row lock
(the order every writer of a run follows); one conditional `UPDATE ... FROM (VALUES ...)` of all
reported steps (a step no longer running the reported attempt is not touched: the report is
stale); per group one `UPDATE ... RETURNING` adding the batch's finished branches to its
counters; per run one `UPDATE ... RETURNING last_seq` allocating the event seqs; one insert of
all events. Then the pure decision of runtime.core.fanin per group: the batch that decides the
group settles it, cancels its unfinished branches and bumps `Run.wakeups` once. The batch's
claims (runtime.branch_claims) follow. Nothing here reads the event log.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import connection

from runtime import conf
from runtime.branch_claims import claim_branches_txn
from runtime.branch_sql import as_uuid, cast, chunks, column_value, values_cte
from runtime.core.fanin import CANCELLED_ERROR, BranchReceipt, FanInRule, GroupCounts, after_finish
from runtime.core.writes import BranchClaim, BranchReport, EventDraft, FanoutGroupRow
from runtime.models import ACTIVE_RUN_STATES, Event, FanoutGroup, Run, Step, StepStatus

_OUTCOME_STATUS = {
    "completed": StepStatus.COMPLETED,
    "failed": StepStatus.FAILED,
    "retrying": StepStatus.PENDING,
}
_OUTCOME_EVENT = {
    "completed": "step_completed",
    "failed": "step_failed",
    "retrying": "step_retrying",
}


@dataclass
class Receipts:
    """Receipts computed in a transaction, handed to their callers only after it committed."""

    pending: list[Callable[[], None]] = field(default_factory=list)

    def deliver(self) -> None:
        for fill in self.pending:
            fill()

    def report(self, report: BranchReport, value: BranchReceipt) -> None:
        def fill() -> None:
            target = report.receipt
            target.recorded = value.recorded
            target.release = list(value.release)
            target.wake = value.wake

        self.pending.append(fill)


@dataclass
class _Tally:
    """One group's finished branches in this batch, in event-log order."""

    succeeded: int = 0
    failed: int = 0
    first_failure: int | None = None
    last: BranchReceipt | None = None  # the receipt that carries the group's actions


def insert_groups_txn(rows: Sequence[tuple[uuid.UUID, FanoutGroupRow]], now: datetime) -> None:
    """Insert new fan-out groups; a replayed insert of the same group does nothing."""
    if not rows:
        return
    check_at = now + timedelta(seconds=conf.get().LEASE_SECONDS)
    FanoutGroup.objects.bulk_create(
        [
            FanoutGroup(
                id=row.id,
                run_id=run_id,
                first_position=row.first_position,
                total=row.total,
                released=row.released,
                need=row.need,
                failure_limit=row.failure_limit,
                created_at=row.created_at,
                check_at=check_at,
            )
            for run_id, row in rows
        ],
        ignore_conflicts=True,
    )


def record_branch_writes_txn(
    writes: Sequence[BranchReport | BranchClaim], now: datetime
) -> Receipts:
    """Record a batch's branch reports, then its claims (inside the caller's transaction)."""
    receipts = Receipts()
    reports = [w for w in writes if isinstance(w, BranchReport)]
    if reports:
        _record_reports(reports, now, receipts)
    claims = [w for w in writes if isinstance(w, BranchClaim)]
    if claims:
        receipts.pending.extend(claim_branches_txn(claims, now))
    return receipts


def _record_reports(reports: list[BranchReport], now: datetime, receipts: Receipts) -> None:
    run_ids = sorted({r.run_id for r in reports})  # one lock order for every writer
    active = {run_id for run_id in run_ids if _lock_run(run_id, now)}
    # The run finished or was cancelled: its reports are stale. So is a duplicate report.
    live: dict[tuple[uuid.UUID, int], BranchReport] = {}
    for r in reports:
        if r.run_id in active:
            live.setdefault((r.step_id, r.attempt), r)
    recorded = _update_steps(list(live.values()))
    drafts: dict[uuid.UUID, list[EventDraft]] = {run_id: [] for run_id in active}
    tallies: dict[uuid.UUID, _Tally] = {}
    for r in reports:
        if live.get((r.step_id, r.attempt)) is not r or (r.step_id, r.attempt) not in recorded:
            receipts.report(r, BranchReceipt())
            continue
        value = BranchReceipt(recorded=True)
        receipts.report(r, value)
        drafts[r.run_id] += [
            EventDraft("step_started", r.started_at, r.step_id, {"attempt": r.attempt}),
            EventDraft(_OUTCOME_EVENT[r.outcome], r.finished_at, r.step_id, _payload(r)),
        ]
        if r.outcome == "retrying":
            continue
        tally = tallies.setdefault(r.group_id, _Tally())
        if r.outcome == "completed":
            tally.succeeded += 1
        else:
            tally.failed += 1
            if tally.first_failure is None:
                tally.first_failure = r.position
        tally.last = value
    group_runs = {r.group_id: r.run_id for r in reports}
    woken = {group_runs[g] for g, tally in tallies.items() if _count(group_runs[g], g, tally, now)}
    events: list[Event] = []
    for run_id, run_drafts in drafts.items():
        if not run_drafts and run_id not in woken:
            continue
        seq = _allocate_seqs(run_id, len(run_drafts), run_id in woken, now) - len(run_drafts)
        for draft in run_drafts:
            seq += 1
            events.append(
                Event(
                    run_id=run_id,
                    seq=seq,
                    type=draft.type,
                    step_id=draft.step_id,
                    payload=draft.payload,
                    created_at=draft.at,
                )
            )
    if events:
        Event.objects.bulk_create(events)


def _lock_run(run_id: uuid.UUID, now: datetime) -> bool:
    """Take the run's row lock; False if the run is no longer active."""
    table = Run._meta.db_table
    states = ", ".join(["%s"] * len(ACTIVE_RUN_STATES))
    sql = f"UPDATE {table} SET updated_at = %s WHERE id = %s AND status IN ({states}) RETURNING id"
    with connection.cursor() as cursor:
        cursor.execute(sql, [now, column_value(Run, "id", run_id), *map(str, ACTIVE_RUN_STATES)])
        return cursor.fetchone() is not None


def _update_steps(reports: list[BranchReport]) -> set[tuple[uuid.UUID, int]]:
    """Write every report whose step still runs its attempt; returns those (step, attempt)."""
    if not reports:
        return set()
    columns = ["v_id", "v_attempt", "v_status", "v_result", "v_error", "v_finished", "v_wake"]
    rows = [
        (
            column_value(Step, "id", r.step_id),
            r.attempt,
            _OUTCOME_STATUS[r.outcome].value,
            column_value(Step, "result", r.result if r.outcome == "completed" else None),
            column_value(Step, "error", r.error),
            column_value(Step, "finished_at", r.finished_at if r.outcome != "retrying" else None),
            column_value(Step, "wake_at", r.wake_at if r.outcome == "retrying" else None),
        )
        for r in sorted(reports, key=lambda r: r.step_id.hex)  # one lock order for every writer
    ]
    recorded: set[tuple[uuid.UUID, int]] = set()
    for part in chunks(rows, len(columns)):
        cte, params = values_cte("v", columns, part)
        sql = (
            f"{cte}UPDATE {Step._meta.db_table} SET status = v_status, "
            f"result = {cast('v_result', 'jsonb')}, error = {cast('v_error', 'jsonb')}, "
            f"finished_at = {cast('v_finished', 'timestamptz')}, "
            f"wake_at = {cast('v_wake', 'timestamptz')} "
            f"FROM v WHERE id = {cast('v_id', 'uuid')} AND attempt = {cast('v_attempt', 'integer')}"
            " AND status = %s RETURNING id, attempt"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [*params, StepStatus.RUNNING.value])
            recorded.update((as_uuid(sid), int(attempt)) for sid, attempt in cursor.fetchall())
    return recorded


def _payload(report: BranchReport) -> dict[str, Any]:
    payload: dict[str, Any] = {"attempt": report.attempt}
    if report.outcome == "completed":
        payload["result"] = report.result
    else:
        payload["error"] = report.error
    if report.outcome == "failed":
        payload["reason"] = report.reason
    if report.outcome == "retrying" and report.wake_at is not None:
        payload["delay"] = max((report.wake_at - report.finished_at).total_seconds(), 0.0)
        payload["wake_at"] = report.wake_at.isoformat()
    return payload


def _count(run_id: uuid.UUID, group_id: uuid.UUID, tally: _Tally, now: datetime) -> bool:
    """Count a batch's finished branches on their group; settle it or move its window.

    Returns whether this batch settled the group (the run must wake). The group's actions go
    to one receipt: its last report in the batch.
    """
    sql = (
        f"UPDATE {FanoutGroup._meta.db_table} SET succeeded = succeeded + %s, "
        "failed = failed + %s, first_failure = COALESCE(first_failure, %s) "
        "WHERE id = %s AND verdict IS NULL "
        "RETURNING total, released, succeeded, failed, need, failure_limit, first_position"
    )
    params = [tally.succeeded, tally.failed, tally.first_failure]
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, column_value(FanoutGroup, "id", group_id)])
        row = cursor.fetchone()
    if row is None:
        return False  # already settled; its unfinished branches were cancelled with it
    total, released, succeeded, failed, need, failure_limit, first = (
        int(v) if v is not None else None for v in row
    )
    if total is None or released is None or first is None or failure_limit is None:
        raise RuntimeError(f"fan-out group {group_id} has a NULL counter")
    rule = FanInRule(total, need, failure_limit)
    counts = GroupCounts(total, released, succeeded or 0, failed or 0)
    step = after_finish(rule, counts, tally.succeeded + tally.failed)
    group = FanoutGroup.objects.filter(id=group_id)
    receipt = tally.last or BranchReceipt()
    if step.verdict is not None:
        group.update(verdict=step.verdict, settled_at=now)
        Step.objects.filter(
            run_id=run_id,
            position__gte=first,
            position__lt=first + total,
            status__in=[StepStatus.PENDING, StepStatus.RUNNING],
        ).update(status=StepStatus.CANCELLED, finished_at=now, error=CANCELLED_ERROR, wake_at=None)
        receipt.wake = True
        return True
    if step.release:
        group.update(released=step.release.stop)
        positions = [first + index for index in step.release]
        # A released branch's wake_at is its dispatch time: the sweep republishes it if its
        # message never arrives.
        Step.objects.filter(
            run_id=run_id, position__in=positions, status=StepStatus.PENDING
        ).update(wake_at=now)
        receipt.release = positions
    return False


def _allocate_seqs(run_id: uuid.UUID, count: int, wake: bool, now: datetime) -> int:
    """Take `count` event seqs under the run's row lock; a wake also makes the run due now."""
    table = Run._meta.db_table
    sets = ["last_seq = last_seq + %s"]
    params: list[Any] = [count]
    if wake:
        # wake_at = now: if the enqueue after commit is lost, the recovery sweep runs it.
        sets += ["wakeups = wakeups + 1", "wake_at = %s"]
        params.append(now)
    sql = f"UPDATE {table} SET {', '.join(sets)} WHERE id = %s RETURNING last_seq"
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, column_value(Run, "id", run_id)])
        row = cursor.fetchone()
    if row is None:
        raise RuntimeError(f"run {run_id} vanished while its branch reports were recorded")
    return int(row[0])
