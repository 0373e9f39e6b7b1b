"""Fan-in, database side: branch reports counted on their group inside the sink's transaction.

`record_reports_txn` runs inside `DatabaseSink`'s batch transaction (it assumes one). Per run it
takes the run's row lock first (the order every writer of a run follows), then per report:
a conditional step update (still running this attempt, or the report is stale), one
`UPDATE fanout_group ... RETURNING` of the counters, and the pure decision of
runtime.core.fanin. The completion that decides the group settles it, cancels its unfinished
branches and bumps `Run.wakeups`; nothing here reads the event log.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import connection

from runtime import conf
from runtime.core.fanin import CANCELLED_ERROR, BranchReceipt, FanInRule, GroupCounts, after_finish
from runtime.core.writes import BranchReport, EventDraft, FanoutGroupRow
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
    """Receipts computed in a transaction, handed to their reports only after it committed."""

    filled: list[tuple[BranchReceipt, BranchReceipt]] = field(default_factory=list)

    def deliver(self) -> None:
        for target, value in self.filled:
            target.recorded = value.recorded
            target.release = list(value.release)
            target.wake = value.wake


def _db_uuid(value: uuid.UUID) -> Any:
    return value.hex if connection.vendor == "sqlite" else value


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


def record_reports_txn(reports: Sequence[BranchReport], now: datetime) -> Receipts:
    """Record branch reports (inside the caller's transaction); returns their receipts."""
    receipts = Receipts()
    by_run: dict[uuid.UUID, list[BranchReport]] = {}
    for report in reports:
        by_run.setdefault(report.run_id, []).append(report)
    events: list[Event] = []
    for run_id, run_reports in by_run.items():
        locked = Run.objects.filter(id=run_id, status__in=ACTIVE_RUN_STATES).update(updated_at=now)
        if not locked:  # the run finished or was cancelled: every report is stale
            receipts.filled.extend((r.receipt, BranchReceipt()) for r in run_reports)
            continue
        drafts: list[EventDraft] = []
        wake = False
        for report in run_reports:
            receipt = _record_one(report, now, drafts)
            receipts.filled.append((report.receipt, receipt))
            wake = wake or receipt.wake
        if drafts or wake:
            last_seq = _allocate_seqs(run_id, len(drafts), wake, now)
            seq = last_seq - len(drafts)
            for draft in drafts:
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
    return receipts


def _record_one(report: BranchReport, now: datetime, drafts: list[EventDraft]) -> BranchReceipt:
    final = report.outcome != "retrying"
    updated = Step.objects.filter(
        id=report.step_id, status=StepStatus.RUNNING, attempt=report.attempt
    ).update(
        status=_OUTCOME_STATUS[report.outcome],
        result=report.result if report.outcome == "completed" else None,
        error=report.error,
        finished_at=report.finished_at if final else None,
        wake_at=None if final else report.wake_at,
    )
    if not updated:
        return BranchReceipt()  # a duplicate, or an attempt that was cancelled or taken over
    drafts.append(
        EventDraft("step_started", report.started_at, report.step_id, {"attempt": report.attempt})
    )
    drafts.append(
        EventDraft(
            _OUTCOME_EVENT[report.outcome], report.finished_at, report.step_id, _payload(report)
        )
    )
    receipt = BranchReceipt(recorded=True)
    if final:
        _count(report, now, receipt)
    return receipt


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


def _count(report: BranchReport, now: datetime, receipt: BranchReceipt) -> None:
    """Count a finished branch on its group; settle it or move its concurrency window."""
    ok = report.outcome == "completed"
    table = FanoutGroup._meta.db_table
    sets = ["succeeded = succeeded + %s", "failed = failed + %s"]
    params: list[Any] = [int(ok), int(not ok)]
    if not ok:
        sets.append("first_failure = COALESCE(first_failure, %s)")
        params.append(report.position)
    sql = (
        f"UPDATE {table} SET {', '.join(sets)} WHERE id = %s AND verdict IS NULL "
        "RETURNING total, released, succeeded, failed, need, failure_limit, first_position"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, _db_uuid(report.group_id)])
        row = cursor.fetchone()
    if row is None:
        return  # already settled; its unfinished branches were cancelled with it
    total, released, succeeded, failed, need, failure_limit, first = (
        int(v) if v is not None else None for v in row
    )
    if total is None or released is None or first is None or failure_limit is None:
        raise RuntimeError(f"fan-out group {report.group_id} has a NULL counter")
    rule = FanInRule(total, need, failure_limit)
    step = after_finish(rule, GroupCounts(total, released, succeeded or 0, failed or 0), 1)
    group = FanoutGroup.objects.filter(id=report.group_id)
    if step.verdict is not None:
        group.update(verdict=step.verdict, settled_at=now)
        Step.objects.filter(
            run_id=report.run_id,
            position__gte=first,
            position__lt=first + total,
            status__in=[StepStatus.PENDING, StepStatus.RUNNING],
        ).update(status=StepStatus.CANCELLED, finished_at=now, error=CANCELLED_ERROR, wake_at=None)
        receipt.wake = True
    elif step.release:
        group.update(released=step.release.stop)
        positions = [first + index for index in step.release]
        # A released branch's wake_at is its dispatch time: the sweep republishes it if its
        # message never arrives.
        Step.objects.filter(
            run_id=report.run_id, position__in=positions, status=StepStatus.PENDING
        ).update(wake_at=now)
        receipt.release = positions


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
        cursor.execute(sql, [*params, _db_uuid(run_id)])
        row = cursor.fetchone()
    if row is None:
        raise RuntimeError(f"run {run_id} vanished while its branch reports were recorded")
    return int(row[0])
