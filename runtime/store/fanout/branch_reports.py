"""Fan-in, database side: a batch of branch reports counted on their groups in one go.

`record_branch_writes_txn` runs inside `DatabaseSink`'s batch transaction (it assumes one) and
is set-based per batch, whatever its size, in two rounds (on PostgreSQL each one pipeline; in
a pipelined transaction the first carries the BEGIN and the second the COMMIT):

1. per run a row lock, one conditional update of all reported steps (a step no longer running
   the reported attempt is not touched: that report is stale), and per group the batch's
   finished branches added to its counters;
2. per group the pure decision of runtime.core.fanin, as if the reports had come one by one
   (`after_batch`), and what it needs written: counter corrections, a settle that cancels the
   unfinished branches and wakes the run once, or a release; then the events and the claims.

A batch that decides nothing can be written in one round instead, on PostgreSQL
(runtime.store.fanout.quiet_reports); the server refuses it when it would decide something, and it
comes here. Nothing here reads the event log. The statements are in
runtime.store.fanout.report_statements.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from runtime.core.branches import BranchClaim, BranchReceipt, BranchReport, ClaimReceipt
from runtime.core.fanin import FanInRule, GroupCounts, after_batch
from runtime.core.writes import EventDraft
from runtime.store.dialect import Statement, as_uuid, execute, time_param
from runtime.store.fanout import report_statements as sql
from runtime.store.fanout.branch_claims import ClaimBatch
from runtime.store.history.batch import BranchWrites

Rows = list[list[tuple[Any, ...]]]


class Receipts(dict[int, ClaimReceipt | BranchReceipt]):
    """The receipts a batch's branch writes earned, by each claim's or report's `key`
    (runtime.core.branches.receipt_key); the sink returns them to their writers once the
    transaction committed. `woken`: the runs whose suspend in the batch a wake-up raced,
    with their wake-ups (runtime.store.runs.run_updates)."""

    def __init__(self) -> None:
        super().__init__()
        self.woken: dict[uuid.UUID, int] = {}

    def add_claims(self, claims: Sequence[BranchClaim], receipts: list[ClaimReceipt]) -> None:
        for claim, receipt in zip(claims, receipts, strict=True):
            self[claim.key] = receipt


def record_branch_writes_txn(writes: BranchWrites, now: datetime) -> Receipts:
    """Record a batch's branch reports, then take its claims (inside the caller's transaction)."""
    receipts = Receipts()
    claims = ClaimBatch(writes.claims, now)
    reports = writes.reports
    if reports:
        results = _ReportBatch(reports, now).record(receipts, claims.statements)
    else:
        results = execute(claims.statements, last=True)
    receipts.add_claims(claims.claims, claims.receipts(results))
    return receipts


@dataclass
class _Group:
    """One group's reports written in this batch (batch order) and its optimistic counts."""

    run_id: uuid.UUID
    reports: list[BranchReport] = field(default_factory=list)
    succeeded: int = 0
    failed: int = 0


class _ReportBatch:
    """The reports of one batch, the receipts they earn and the second round's statements."""

    def __init__(self, reports: list[BranchReport], now: datetime) -> None:
        self.reports = reports
        self.now = now
        self.live: dict[tuple[uuid.UUID, int], BranchReport] = {}
        for r in reports:
            self.live.setdefault((r.step_id, r.attempt), r)  # a duplicate in the batch is stale
        self.groups: dict[uuid.UUID, _Group] = {}
        for r in self.live.values():  # counted optimistically; corrected if some were stale
            g = self.groups.setdefault(r.group_id, _Group(r.run_id))
            g.succeeded += r.outcome == "completed"
            g.failed += r.outcome == "failed"
        self.values: dict[int, BranchReceipt] = {}  # by each report's key
        self.second: list[Statement] = []
        self.woken: set[uuid.UUID] = set()

    def record(self, receipts: Receipts, then: list[Statement]) -> Rows:
        """Write the batch; runs `then` in the second round and returns their rows."""
        active, counts = self._first_round()
        for gid, g in self.groups.items():
            for r in g.reports:
                self.values[r.key] = BranchReceipt(recorded=True)
            if self._decide(gid, g, counts.get(gid)):
                self.woken.add(g.run_id)
        self._events(active, receipts)
        results = execute(self.second + then, last=True)
        return results[len(self.second) :]

    def _first_round(self) -> tuple[set[uuid.UUID], dict[uuid.UUID, list[tuple[Any, ...]]]]:
        """Lock the runs, write the steps, count the groups; returns the active runs and the
        counters each counted group returned."""
        run_ids = sorted({r.run_id for r in self.reports}, key=str)  # one lock order for all
        counted = [gid for gid, g in self.groups.items() if g.succeeded or g.failed]
        locks = [sql.lock_statement(run_id, self.now) for run_id in run_ids]
        steps = sql.step_statements(list(self.live.values()))
        counts = []
        for gid in counted:
            g = self.groups[gid]
            counts.append(sql.count_statement(g.run_id, gid, g.succeeded, g.failed))
        results = execute(locks + steps + counts)
        lock_rows, step_rows = results[: len(locks)], results[len(locks) : len(locks) + len(steps)]
        active = {run_id for run_id, rows in zip(run_ids, lock_rows, strict=True) if rows}
        written = {(as_uuid(sid), int(attempt)) for rows in step_rows for sid, attempt in rows}
        for g in self.groups.values():
            g.reports = []
        for r in self.reports:
            key = (r.step_id, r.attempt)
            if self.live[key] is r and key in written:
                self.groups[r.group_id].reports.append(r)
        return active, dict(zip(counted, results[len(locks) + len(steps) :], strict=True))

    def _decide(self, gid: uuid.UUID, g: _Group, row: list[tuple[Any, ...]] | None) -> bool:
        """The group's decision after its written reports; True if this batch settled it.

        The reports after the deciding one are cancelled and stale, like those arriving after
        a settle; the group's actions go to one receipt: the deciding report's, else its last
        finished one.
        """
        if row is None:  # nothing was counted: only retries (or nothing) were written
            return False
        if not row:  # already settled: whatever was written came too late
            for r in g.reports:
                self.values[r.key] = BranchReceipt()
            if g.reports:
                stale = [r.step_id for r in g.reports]
                self.second.append(sql.cancel_statement(g.run_id, None, stale, self.now))
            return False
        total, released, succeeded, failed, need, failure_limit, first = _ints(row[0])
        before = GroupCounts(total, released, succeeded - g.succeeded, failed - g.failed)
        step = after_batch(
            FanInRule(total, need, failure_limit), before, [r.outcome for r in g.reports]
        )
        accepted, late = g.reports[: step.accepted], g.reports[step.accepted :]
        for r in late:
            self.values[r.key] = BranchReceipt()
        sets: list[str] = []
        params: list[Any] = []
        if (step.counts.succeeded, step.counts.failed) != (succeeded, failed):
            sets += ["succeeded = %s", "failed = %s"]
            params += [step.counts.succeeded, step.counts.failed]
        failures = [r.position for r in accepted if r.outcome == "failed"]
        if failures:  # the first failed branch in event-log order
            sets.append("first_failure = COALESCE(first_failure, %s)")
            params.append(failures[0])
        if step.verdict is not None:
            sets += ["verdict = %s", "settled_at = %s"]
            params += [step.verdict, time_param(self.now)]
            span = (first, first + total)
            late_ids = [r.step_id for r in late]
            self.second.append(sql.cancel_statement(g.run_id, span, late_ids, self.now))
            deciding = accepted[-1].key
            self.values[deciding] = replace(self.values[deciding], wake=True)
        elif step.release:
            sets.append("released = %s")
            params.append(step.release.stop)
            start, stop = first + step.release.start, first + step.release.stop
            self.second.append(sql.release_statement(g.run_id, start, stop, self.now))
            finals = [r for r in g.reports if r.outcome != "retrying"]
            last = finals[-1].key
            positions = tuple(first + index for index in step.release)
            self.values[last] = replace(self.values[last], release=positions)
        if sets:
            self.second.append(sql.group_update_statement(g.run_id, gid, sets, params))
        return step.verdict is not None

    def _events(self, active: set[uuid.UUID], receipts: Receipts) -> None:
        """Hand out the receipts; the recorded reports' events and their seqs go to round 2."""
        drafts: dict[uuid.UUID, list[EventDraft]] = {run_id: [] for run_id in active}
        for r in self.reports:
            value = self.values.get(r.key, BranchReceipt())
            receipts[r.key] = value
            if value.recorded:
                drafts[r.run_id] += sql.report_events(r)
        events: list[tuple[Any, ...]] = []
        for run_id, run_drafts in drafts.items():
            wake = run_id in self.woken
            rows = sql.event_rows(run_id, run_drafts)
            both = sql.seq_and_events_statement(run_id, wake, self.now, rows)
            if both is not None:
                self.second.append(both)
                continue
            if run_drafts or wake:
                self.second.append(sql.seq_statement(run_id, len(run_drafts), wake, self.now))
            events += rows
        self.second += sql.event_statements(events)


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
