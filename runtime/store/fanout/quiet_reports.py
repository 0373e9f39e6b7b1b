"""Quiet branch reports on PostgreSQL: a batch that decides nothing, written in one round trip.

Most reports of a fan-out only add to its counters: the branch completed (or will retry), the
fan-out is not decided by it and releases nothing. `record_branch_writes_txn` still needs two
rounds for them, since it decides in Python between reading the counters and writing what the
decision asks for. A batch of one run's reports can instead go as a single statement that
writes what such a report writes (the steps, the counters, the events and their seqs), inside
the pipeline that carries BEGIN, the run's row lock, the batch's claims and COMMIT, provided
that statement fails whenever the batch is not quiet: a report that is stale, a run that is no
longer active, a group that is settled, has branches left to release, or would be decided by
these counts. The groups are checked before anything is written: a batch that would decide
or release (the usual end of a fan-out) writes nothing and says so, without an error in the
server's log, and the caller writes its reports through the two rounds, which decide them
exactly (the claims of the pipeline committed with it). A batch whose writes disagree with the
check (a stale report, a run no longer active) fails by dividing by zero, as the checkpoint
fast path does (runtime.store.history.pg_statements), and goes through the two rounds whole. So the
fast path commits only what the two rounds would have committed, with the same receipts
(recorded; nothing to release, nothing to wake).

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

from runtime.core.branches import BranchReceipt, BranchReport
from runtime.models import FanoutGroup
from runtime.store.dialect import MAX_PARAMS, Statement, cast, uuid_param, values_list
from runtime.store.fanout import report_statements as sql
from runtime.store.fanout.branch_claims import ClaimBatch
from runtime.store.fanout.branch_reports import Receipts
from runtime.store.history.batch import BranchWrites

_QUIET_OUTCOMES = frozenset({"completed", "retrying"})


@dataclass
class QuietBatch:
    """The pipeline of a quiet batch: the run's lock, the report statement, the claims."""

    reports: list[BranchReport]
    claims: ClaimBatch
    statements: list[Statement]

    def wrote_reports(self, results: Sequence[Sequence[tuple[Any, ...]]]) -> bool:
        """Whether the report statement wrote the reports (else it wrote nothing: a group
        would be decided or must release branches; the claims committed all the same)."""
        return bool(results[1] and results[1][0][0] == 1)

    def receipts(self, results: Sequence[Sequence[tuple[Any, ...]]]) -> Receipts:
        """The receipts the pipeline's rows (`results`) earned, once it committed."""
        receipts = Receipts()
        for r in self.reports:
            receipts[r.key] = BranchReceipt(recorded=True)
        receipts.add_claims(self.claims.claims, self.claims.receipts(results[2:]))
        return receipts


def quiet_batch(writes: BranchWrites, now: datetime) -> QuietBatch | None:
    """The one-round pipeline of this batch, or None if it cannot be one (it has no report,
    reports of several runs, a failed outcome, a report twice, or too many rows)."""
    reports = writes.reports
    if not reports or len({r.run_id for r in reports}) != 1:
        return None
    if any(r.outcome not in _QUIET_OUTCOMES for r in reports):
        return None
    if len({(r.step_id, r.attempt) for r in reports}) != len(reports):
        return None
    statement = report_statement(reports, now)
    if len(statement[1]) > MAX_PARAMS:
        return None
    claims = ClaimBatch(writes.claims, now)
    run_id = reports[0].run_id
    statements = [sql.lock_statement(run_id, now), statement, *claims.statements]
    return QuietBatch(reports, claims, statements)


# Whether the batch's groups stay quiet, read before anything is written (the `q` CTE).
_QUIET = "(SELECT quiet FROM q)"


def report_statement(reports: list[BranchReport], now: datetime) -> Statement:
    """One statement writing one run's reports as if quiet. It returns 1 if it wrote them, 0
    (having written nothing) if a group they add to would be decided or must release branches,
    the usual end of a fan-out; it divides by zero only if the writes disagree with that (a
    stale report, a run no longer active), so that the pipeline rolls back."""
    run_id = reports[0].run_id
    successes = Counter(r.group_id for r in reports if r.outcome == "completed")
    ctes, params = _quiet_check(run_id, successes)
    steps, step_params = values_list("v0", sql.STEP_COLUMNS, sql.step_rows(reports))
    update, update_params = sql.step_update([run_id])
    ctes += [steps, f"v AS (SELECT * FROM v0 WHERE {_QUIET})", f"w AS ({update})"]
    params += [*step_params, *update_params]
    if successes:
        ctes.append(_groups_update())
        params.append(uuid_param(run_id))
    drafts = [draft for r in reports for draft in sql.report_events(r)]
    events, event_params = values_list("e0", sql.EVENT_COLUMNS, sql.event_rows(run_id, drafts))
    seqs, seq_params = sql.seqs_cte(run_id, len(drafts), False, now, gate=_QUIET)
    ctes += [events, f"e AS (SELECT * FROM e0 WHERE {_QUIET})", seqs]
    ctes.append(f"i AS ({sql.event_insert('s')})")
    params += [*event_params, *seq_params]
    # `w` writes no step of a run that is no longer active: then its count is short too.
    checks = ["(SELECT count(*) FROM w) = %s"]
    params.append(len(reports))
    if successes:
        checks.append("(SELECT count(*) FROM g) = %s")
        params.append(len(successes))
    guard = f"CASE WHEN {_QUIET} THEN 1 / ({' AND '.join(checks)})::int ELSE 0 END"
    return f"WITH {', '.join(ctes)} SELECT {guard}", params


# A group stays quiet after `gv.g_n` more successes (see the module's docstring).
_AFTER = "succeeded + gv.g_n::integer"
_STAYS_QUIET = (
    "id = gv.g_id::uuid AND verdict IS NULL AND released >= total "
    f"AND failed <= failure_limit AND (need IS NULL OR {_AFTER} < need) "
    f"AND {_AFTER} + failed < total"
)


def _quiet_check(run_id: uuid.UUID, successes: Counter[uuid.UUID]) -> tuple[list[str], list[Any]]:
    """The `gv` rows (each group's successes) and `q`: whether every such group stays quiet."""
    if not successes:
        return ["q AS (SELECT TRUE AS quiet)"], []
    rows = [(uuid_param(gid), n) for gid, n in sorted(successes.items(), key=lambda i: str(i[0]))]
    values, params = values_list("gv", ["g_id", "g_n"], rows)
    check = (
        f"q AS (SELECT count(*) = %s AS quiet FROM {FanoutGroup._meta.db_table}, gv "
        f"WHERE run_id = {cast('%s', 'uuid')} AND {_STAYS_QUIET})"
    )
    return [values, check], [*params, len(successes), uuid_param(run_id)]


def _groups_update() -> str:
    """`g`: each group's successes added, if the batch is quiet and the group stays so."""
    return (
        f"g AS (UPDATE {FanoutGroup._meta.db_table} SET succeeded = {_AFTER} FROM gv "
        f"WHERE {_QUIET} AND run_id = {cast('%s', 'uuid')} AND {_STAYS_QUIET} RETURNING id)"
    )
