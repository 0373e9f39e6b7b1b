"""The claim of a batch's runs (runtime.worker.run_batch): every run's lease and history in one
round trip instead of one per run.

On PostgreSQL one `UPDATE ... FROM unnest(ids, tokens)` takes the lease of every run of the
batch that a single claim (runtime.store.runs.run_statements.claim_run) would take, each under its
own token, and a second statement in the same pipeline reads their histories; both are
prepared, except behind a pooler in transaction mode (runtime.store.connection). The claim is
committed without waiting for the WAL flush, as a single run's is
(runtime.store.runs.run_statements.claim_run_with_history). Elsewhere (SQLite, or inside an atomic
block) the runs are claimed one by one.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from runtime import conf
from runtime.core.history import RecordedStep
from runtime.models import Run, Step
from runtime.store.history.columns import JSON_COLUMNS
from runtime.store.runs.run_statements import (
    HISTORY_FIELDS,
    RunClaim,
    claim_of,
    claim_run_with_history,
    claim_with_history_round_trip,
    claimable_condition,
    claims_in_one_round_trip,
    history_of,
)

Claimed = dict[uuid.UUID, tuple[RunClaim, dict[int, RecordedStep]]]


def claim_runs_with_history(
    claims: Sequence[tuple[uuid.UUID, str]], now: datetime, owner: int | None = None
) -> Claimed:
    """Take the lease of each (run id, token) whose run a single claim would take now, under
    that run's own token; the runs claimed, with their claim and history. Run ids must be
    distinct."""
    if not claims:
        return {}
    if not claims_in_one_round_trip():
        found = (
            (run_id, claim_run_with_history(run_id, token, now, owner)) for run_id, token in claims
        )
        return {run_id: got for run_id, got in found if got is not None}
    # Rows are locked in id order, so two workers claiming overlapping batches cannot deadlock.
    ordered = sorted(claims, key=lambda claim: claim[0])
    ids, tokens = [run_id for run_id, _ in ordered], [token for _, token in ordered]
    claimed_rows, rows = claim_with_history_round_trip(
        _batch_claim_statement(ids, tokens, now, owner), (_HISTORIES_PG, [ids])
    )
    claimed = {row[0]: claim_of(row[1:]) for row in claimed_rows}
    steps: dict[uuid.UUID, list[Any]] = {run_id: [] for run_id in claimed}
    for row in rows:
        if row[0] in steps:  # the history of a run not claimed here is not this batch's
            steps[row[0]].append(row[1:])
    return {
        run_id: (claimed[run_id], history_of(steps[run_id])) for run_id in ids if run_id in claimed
    }


def _batch_claim_statement(
    ids: list[uuid.UUID], tokens: list[str], now: datetime, owner: int | None
) -> tuple[str, list[Any]]:
    lease_until = now + timedelta(seconds=conf.get().LEASE_SECONDS)
    claimable, params = claimable_condition("r.", now)
    sql = (
        f"UPDATE {Run._meta.db_table} r SET lease_token = c.token, lease_expires_at = %s, "
        "lease_owner = %s "
        "FROM (SELECT * FROM unnest(%s::uuid[], %s::text[]) AS u(id, token) ORDER BY id) c "
        f"WHERE r.id = c.id AND {claimable} "
        "RETURNING r.id, r.status, r.wakeups, r.workflow, r.input, r.priority, r.app_version"
    )
    return sql, [lease_until, owner, ids, tokens, *params]


# The histories of all of a batch's runs; its JSON columns as text, as a single run's
# (runtime.store.runs.run_statements.load_history).
_HISTORIES_PG = (
    "SELECT run_id, "
    f"{', '.join(f'{f}::text' if f in JSON_COLUMNS else f for f in HISTORY_FIELDS)} "
    f"FROM {Step._meta.db_table} WHERE run_id = ANY(%s::uuid[])"
)
