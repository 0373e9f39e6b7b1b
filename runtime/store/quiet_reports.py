"""Quiet branch reports on PostgreSQL: a batch that decides nothing, written in one round trip.

Most reports of a fan-out only add to its counters: the branch completed (or will retry), the
fan-out is not decided by it and releases nothing. `record_branch_writes_txn` still needs two
rounds for them, since it decides in Python between reading the counters and writing what the
decision asks for. A batch of one run's reports can instead go as a single statement that
writes what such a report writes (the steps, the counters, the events and their seqs), inside
the pipeline that carries BEGIN, the run's row lock, the batch's claims and COMMIT, provided
that statement fails whenever the batch is not quiet: a report that is stale, a run that is no
longer active, a group that is settled, has branches left to release, or would be decided by
these counts. It fails by dividing by zero, as the checkpoint fast path does
(runtime.store.pg_statements); the caller then writes the batch through the two rounds, which
decide it exactly. So the fast path commits only what the two rounds would have committed,
with the same receipts (recorded; nothing to release, nothing to wake).

A group stays quiet after `n` more successes while it has not failed past its limit, its
successes stay below `need` and its finished branches below `total` (runtime.core.fanin.
FanInRule.verdict, which only a failure or enough successes can reach), and every branch is
released (after_finish releases nothing then).
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from runtime.core.fanin import BranchReceipt
from runtime.core.writes import BranchClaim, BranchReport
from runtime.models import FanoutGroup
from runtime.store import report_statements as sql
from runtime.store.branch_claims import ClaimBatch
from runtime.store.branch_reports import Receipts
from runtime.store.dialect import MAX_PARAMS, Statement, uuid_param, values_list

_QUIET_OUTCOMES = frozenset({"completed", "retrying"})


@dataclass
class QuietBatch:
    """The pipeline of a quiet batch: the run's lock, the report statement, the claims."""

    reports: list[BranchReport]
    claims: ClaimBatch
    statements: list[Statement]

    def receipts(self, results: Sequence[Sequence[tuple[Any, ...]]]) -> Receipts:
        """The receipts the pipeline's rows (`results`) earned, once it committed."""
        receipts = Receipts()
        for r in self.reports:
            receipts[id(r)] = BranchReceipt(recorded=True)
        receipts.add_claims(self.claims.claims, self.claims.receipts(results[2:]))
        return receipts


def quiet_batch(writes: Sequence[BranchReport | BranchClaim], now: datetime) -> QuietBatch | None:
    """The one-round pipeline of this batch, or None if it cannot be one (it has no report,
    reports of several runs, a failed outcome, a report twice, or too many rows)."""
    reports = [w for w in writes if isinstance(w, BranchReport)]
    if not reports or len({r.run_id for r in reports}) != 1:
        return None
    if any(r.outcome not in _QUIET_OUTCOMES for r in reports):
        return None
    if len({(r.step_id, r.attempt) for r in reports}) != len(reports):
        return None
    statement = report_statement(reports, now)
    if len(statement[1]) > MAX_PARAMS:
        return None
    claims = ClaimBatch([w for w in writes if isinstance(w, BranchClaim)], now)
    run_id = reports[0].run_id
    statements = [sql.lock_statement(run_id, now), statement, *claims.statements]
    return QuietBatch(reports, claims, statements)


def report_statement(reports: list[BranchReport], now: datetime) -> Statement:
    """One statement writing one run's reports as if quiet; it divides by zero if they are not."""
    run_id = reports[0].run_id
    steps, step_params = values_list("v", sql.STEP_COLUMNS, sql.step_rows(reports))
    update, update_params = sql.step_update()
    ctes = [steps, f"w AS ({update})"]
    params: list[Any] = [*step_params, *update_params]
    successes = Counter(r.group_id for r in reports if r.outcome == "completed")
    if successes:
        groups, group_params = _groups_update(successes)
        ctes += groups
        params += group_params
    drafts = [draft for r in reports for draft in sql.report_events(r)]
    events, event_params = values_list("e", sql.EVENT_COLUMNS, sql.event_rows(run_id, drafts))
    seqs, seq_params = sql.seqs_cte(run_id, len(drafts), False, now)
    ctes += [events, seqs, f"i AS ({sql.event_insert('s')})"]
    params += [*event_params, *seq_params]
    # `w` writes no step of a run that is no longer active: then its count is short too.
    checks = ["(SELECT count(*) FROM w) = %s"]
    params.append(len(reports))
    if successes:
        checks.append("(SELECT count(*) FROM g) = %s")
        params.append(len(successes))
    return f"WITH {', '.join(ctes)} SELECT 1 / ({' AND '.join(checks)})::int", params


def _groups_update(successes: Counter[uuid.UUID]) -> tuple[list[str], list[Any]]:
    """The `gv` rows and the `g` update: each group's successes added while it stays quiet."""
    rows = [(uuid_param(gid), n) for gid, n in sorted(successes.items(), key=lambda i: str(i[0]))]
    values, params = values_list("gv", ["g_id", "g_n"], rows)
    after = "succeeded + gv.g_n::integer"
    update = (
        f"g AS (UPDATE {FanoutGroup._meta.db_table} SET succeeded = {after} FROM gv "
        "WHERE id = gv.g_id::uuid AND verdict IS NULL AND released >= total "
        f"AND failed <= failure_limit AND (need IS NULL OR {after} < need) "
        f"AND {after} + failed < total RETURNING id)"
    )
    return [values, update], params
