"""Fan-in, database side: a batch of branch reports counted on their groups in one go.

`record_branch_writes_txn` runs inside `DatabaseSink`'s batch transaction (it assumes one) and
is set-based per batch, whatever its size. Round one: per run an `UPDATE` that takes the run's
row lock (the order every writer of a run follows), one conditional `UPDATE ... FROM (VALUES
...)` of all reported steps (a step no longer running the reported attempt is not touched: the
report is stale), per group one `UPDATE ... RETURNING` adding the batch's finished branches to
its counters. Then the pure decision of runtime.core.fanin per group, as if the reports had
come one by one: the report that decides the group settles it, cancels its unfinished branches
(and any report after it) and bumps `Run.wakeups` once. Round two: the group corrections, per
run the event seqs, one insert of all events, and the batch's claims (runtime.branch_claims).
On PostgreSQL each round is one pipeline. Nothing here reads the event log.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from runtime import conf
from runtime.branch_claims import ClaimBatch
from runtime.branch_sql import (
    Statement,
    as_uuid,
    cast,
    chunks,
    execute,
    json_param,
    time_param,
    uuid_param,
    values_cte,
)
from runtime.core.fanin import CANCELLED_ERROR, BranchReceipt, FanInRule, GroupCounts, after_batch
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
_ACTIVE = [str(s) for s in ACTIVE_RUN_STATES]
_Key = tuple[uuid.UUID, int]


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


def first_check_at(now: datetime) -> datetime:
    """When the fan-out sweep first looks at a new group: one lease from its start."""
    return now + timedelta(seconds=conf.get().LEASE_SECONDS)


def insert_groups_txn(rows: Sequence[tuple[uuid.UUID, FanoutGroupRow]], now: datetime) -> None:
    """Insert new fan-out groups; a replayed insert of the same group does nothing."""
    if not rows:
        return
    check_at = first_check_at(now)
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
    """Record a batch's branch reports, then take its claims (inside the caller's transaction)."""
    receipts = Receipts()
    claims = ClaimBatch([w for w in writes if isinstance(w, BranchClaim)], now)
    reports = [w for w in writes if isinstance(w, BranchReport)]
    if reports:
        results = _record_reports(reports, now, receipts, claims.statements)
    else:
        results = execute(claims.statements)
    receipts.pending.extend(claims.receipts(results))
    return receipts


@dataclass
class _Group:
    """One group's reports written in this batch (batch order) and its optimistic counts."""

    run_id: uuid.UUID
    reports: list[BranchReport] = field(default_factory=list)
    succeeded: int = 0
    failed: int = 0


def _record_reports(
    reports: list[BranchReport], now: datetime, receipts: Receipts, then: list[Statement]
) -> list[list[tuple[Any, ...]]]:
    """Record `reports`; runs `then` in the second round and returns their rows."""
    run_ids = sorted({r.run_id for r in reports}, key=str)  # one lock order for every writer
    live: dict[_Key, BranchReport] = {}
    for r in reports:
        live.setdefault((r.step_id, r.attempt), r)  # a duplicate in the batch is stale
    groups: dict[uuid.UUID, _Group] = {}
    for r in live.values():  # counted optimistically; corrected below if some were stale
        g = groups.setdefault(r.group_id, _Group(r.run_id))
        g.succeeded += r.outcome == "completed"
        g.failed += r.outcome == "failed"
    counted = [gid for gid, g in groups.items() if g.succeeded or g.failed]
    steps = _step_statements(list(live.values()))
    first = execute(
        [_lock_statement(run_id, now) for run_id in run_ids]
        + steps
        + [_count_statement(gid, groups[gid]) for gid in counted]
    )
    locks, written_rows, counts = (
        first[: len(run_ids)],
        first[len(run_ids) : len(run_ids) + len(steps)],
        first[len(run_ids) + len(steps) :],
    )
    active = {run_id for run_id, rows in zip(run_ids, locks, strict=True) if rows}
    written = {(as_uuid(sid), int(attempt)) for rows in written_rows for sid, attempt in rows}
    for g in groups.values():
        g.reports = []
    for r in reports:
        if live[(r.step_id, r.attempt)] is r and (r.step_id, r.attempt) in written:
            groups[r.group_id].reports.append(r)
    values: dict[int, BranchReceipt] = {}
    second: list[Statement] = []
    woken: set[uuid.UUID] = set()
    returned = dict(zip(counted, counts, strict=True))
    for gid, g in groups.items():
        for r in g.reports:
            values[id(r)] = BranchReceipt(recorded=True)
        if _decide(gid, g, returned.get(gid), now, values, second):
            woken.add(g.run_id)
    drafts: dict[uuid.UUID, list[EventDraft]] = {run_id: [] for run_id in active}
    for r in reports:
        value = values.get(id(r), BranchReceipt())
        receipts.report(r, value)
        if value.recorded:
            drafts[r.run_id] += [
                EventDraft("step_started", r.started_at, r.step_id, {"attempt": r.attempt}),
                EventDraft(_OUTCOME_EVENT[r.outcome], r.finished_at, r.step_id, _payload(r)),
            ]
    events: list[tuple[Any, ...]] = []
    for run_id, run_drafts in drafts.items():
        if run_drafts or run_id in woken:
            second.append(_seq_statement(run_id, len(run_drafts), run_id in woken, now))
        for back, draft in enumerate(reversed(run_drafts)):
            events.append(
                (
                    uuid_param(run_id),
                    back,
                    draft.type,
                    uuid_param(draft.step_id),
                    json_param(draft.payload),
                    time_param(draft.at),
                )
            )
    second += _event_statements(events)
    results = execute(second + then)
    return results[len(second) :]


def _decide(
    group_id: uuid.UUID,
    g: _Group,
    row: list[tuple[Any, ...]] | None,
    now: datetime,
    values: dict[int, BranchReceipt],
    second: list[Statement],
) -> bool:
    """The group's decision after its written reports; True if this batch settled it.

    Appends the writes it needs to `second`. The reports after the deciding one are cancelled
    and stale, like those arriving after a settle; the group's actions go to one receipt: the
    deciding report's, else its last finished one.
    """
    finals = [r for r in g.reports if r.outcome != "retrying"]
    table = FanoutGroup._meta.db_table
    if row is None:  # nothing was counted: only retries (or nothing) were written
        return False
    if not row:  # already settled: whatever was written came too late
        for r in g.reports:
            values[id(r)] = BranchReceipt()
        if g.reports:
            second.append(_cancel_statement(g.run_id, None, [r.step_id for r in g.reports], now))
        return False
    total, released, succeeded, failed, need, failure_limit, first = _ints(row[0])
    rule = FanInRule(total, need, failure_limit)
    before = GroupCounts(total, released, succeeded - g.succeeded, failed - g.failed)
    step = after_batch(rule, before, [r.outcome for r in g.reports])
    late = g.reports[step.accepted :]
    for r in late:
        values[id(r)] = BranchReceipt()
    sets: list[str] = []
    params: list[Any] = []
    if (step.counts.succeeded, step.counts.failed) != (succeeded, failed):
        sets += ["succeeded = %s", "failed = %s"]
        params += [step.counts.succeeded, step.counts.failed]
    failures = [r.position for r in g.reports[: step.accepted] if r.outcome == "failed"]
    if failures:  # the first failed branch in event-log order
        sets.append("first_failure = COALESCE(first_failure, %s)")
        params.append(failures[0])
    if step.verdict is not None:
        sets += ["verdict = %s", "settled_at = %s"]
        params += [step.verdict, time_param(now)]
        span = (first, first + total)
        second.append(_cancel_statement(g.run_id, span, [r.step_id for r in late], now))
        values[id(g.reports[step.accepted - 1])].wake = True
    elif step.release:
        sets.append("released = %s")
        params.append(step.release.stop)
        # A released branch's wake_at is its dispatch time: the sweep republishes it if its
        # message never arrives.
        second.append(
            (
                f"UPDATE {Step._meta.db_table} SET wake_at = %s WHERE run_id = %s "
                "AND position >= %s AND position < %s AND status = %s",
                [
                    time_param(now),
                    uuid_param(g.run_id),
                    first + step.release.start,
                    first + step.release.stop,
                    StepStatus.PENDING.value,
                ],
            )
        )
        values[id(finals[-1])].release = [first + index for index in step.release]
    if sets:
        second.append(
            (
                f"UPDATE {table} SET {', '.join(sets)} WHERE id = {cast('%s', 'uuid')}",
                [*params, uuid_param(group_id)],
            )
        )
    return step.verdict is not None


def _ints(row: tuple[Any, ...]) -> tuple[int, int, int, int, int | None, int, int]:
    total, released, succeeded, failed, need, failure_limit, first = row
    if None in (total, released, succeeded, failed, failure_limit, first):
        raise RuntimeError("a fan-out group has a NULL counter")
    return (
        int(total),
        int(released),
        int(succeeded),
        int(failed),
        None if need is None else int(need),
        int(failure_limit),
        int(first),
    )


def _lock_statement(run_id: uuid.UUID, now: datetime) -> Statement:
    """Take the run's row lock; no row if the run is no longer active (its reports are stale)."""
    states = ", ".join(["%s"] * len(_ACTIVE))
    return (
        f"UPDATE {Run._meta.db_table} SET updated_at = %s "
        f"WHERE id = {cast('%s', 'uuid')} AND status IN ({states}) RETURNING id",
        [time_param(now), uuid_param(run_id), *_ACTIVE],
    )


def _step_statements(reports: list[BranchReport]) -> list[Statement]:
    """Write every report whose step still runs its attempt (in an active run)."""
    if not reports:
        return []
    columns = [
        "v_id", "v_attempt", "v_status", "v_result", "v_error", "v_finished", "v_wake", "v_expired"
    ]  # fmt: skip
    rows = [
        (
            uuid_param(r.step_id),
            r.attempt,
            _OUTCOME_STATUS[r.outcome].value,
            json_param(r.result if r.outcome == "completed" else None),
            json_param(r.error),
            time_param(r.finished_at if r.outcome != "retrying" else None),
            time_param(r.wake_at if r.outcome == "retrying" else None),
            time_param(r.lease_expired_by),
        )
        for r in sorted(reports, key=lambda r: r.step_id.hex)  # one lock order for every writer
    ]
    step_table, run_table = Step._meta.db_table, Run._meta.db_table
    states = ", ".join(["%s"] * len(_ACTIVE))
    statements: list[Statement] = []
    for part in chunks(rows, len(columns)):
        cte, params = values_cte("v", columns, part)
        sql = (
            f"{cte}UPDATE {step_table} SET status = v_status, "
            f"result = {cast('v_result', 'jsonb')}, error = {cast('v_error', 'jsonb')}, "
            f"finished_at = {cast('v_finished', 'timestamptz')}, "
            f"wake_at = {cast('v_wake', 'timestamptz')} "
            f"FROM v WHERE id = {cast('v_id', 'uuid')} AND attempt = {cast('v_attempt', 'integer')}"
            f" AND status = %s AND ({cast('v_expired', 'timestamptz')} IS NULL"
            f" OR wake_at < {cast('v_expired', 'timestamptz')})"
            f" AND EXISTS (SELECT 1 FROM {run_table} r "
            f"WHERE r.id = {step_table}.run_id AND r.status IN ({states})) RETURNING id, attempt"
        )
        statements.append((sql, [*params, StepStatus.RUNNING.value, *_ACTIVE]))
    return statements


def _count_statement(group_id: uuid.UUID, g: _Group) -> Statement:
    return (
        f"UPDATE {FanoutGroup._meta.db_table} SET succeeded = succeeded + %s, "
        f"failed = failed + %s WHERE id = {cast('%s', 'uuid')} AND verdict IS NULL "
        "RETURNING total, released, succeeded, failed, need, failure_limit, first_position",
        [g.succeeded, g.failed, uuid_param(group_id)],
    )


def _cancel_statement(
    run_id: uuid.UUID, span: tuple[int, int] | None, late: list[uuid.UUID], now: datetime
) -> Statement:
    """Cancel the unfinished branches in `span` (a settle) and the `late` reports' steps."""
    conditions: list[str] = []
    params: list[Any] = []
    if span is not None:
        conditions.append("(position >= %s AND position < %s AND status IN (%s, %s))")
        params += [*span, StepStatus.PENDING.value, StepStatus.RUNNING.value]
    if late:
        ids = ", ".join([cast("%s", "uuid")] * len(late))
        conditions.append(f"id IN ({ids})")
        params += [uuid_param(sid) for sid in late]
    return (
        f"UPDATE {Step._meta.db_table} SET status = %s, result = NULL, "
        f"error = {cast('%s', 'jsonb')}, finished_at = %s, wake_at = NULL "
        f"WHERE run_id = {cast('%s', 'uuid')} AND ({' OR '.join(conditions)})",
        [
            StepStatus.CANCELLED.value,
            json_param(CANCELLED_ERROR),
            time_param(now),
            uuid_param(run_id),
            *params,
        ],
    )


def _seq_statement(run_id: uuid.UUID, count: int, wake: bool, now: datetime) -> Statement:
    """Take `count` event seqs under the run's row lock; a wake also makes the run due now."""
    sets = ["last_seq = last_seq + %s"]
    params: list[Any] = [count]
    if wake:
        # wake_at = now: if the enqueue after commit is lost, the recovery sweep runs it.
        sets += ["wakeups = wakeups + 1", "wake_at = %s"]
        params.append(time_param(now))
    return (
        f"UPDATE {Run._meta.db_table} SET {', '.join(sets)} WHERE id = {cast('%s', 'uuid')}",
        [*params, uuid_param(run_id)],
    )


def _event_statements(rows: list[tuple[Any, ...]]) -> list[Statement]:
    """Insert (run, back, type, step, payload, at) rows; seq = the run's new last_seq - back."""
    statements: list[Statement] = []
    columns = ["e_run", "e_back", "e_type", "e_step", "e_payload", "e_at"]
    for part in chunks(rows, len(columns)):
        cte, params = values_cte("e", columns, part)
        sql = (
            f"{cte}INSERT INTO {Event._meta.db_table} "
            "(run_id, seq, type, step_id, payload, created_at) "
            f"SELECT r.id, r.last_seq - {cast('e_back', 'integer')}, e_type, "
            f"{cast('e_step', 'uuid')}, {cast('e_payload', 'jsonb')}, "
            f"{cast('e_at', 'timestamptz')} "
            f"FROM e JOIN {Run._meta.db_table} r ON r.id = {cast('e_run', 'uuid')}"
        )
        statements.append((sql, params))
    return statements


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
