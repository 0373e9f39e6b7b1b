"""Branch claims, database side: a batch of claims taken with one conditional update.

Concurrent branch threads of a worker group-commit their claims through the checkpoint writer
(a `BranchClaim` payload). Inside the sink's batch transaction the claims become one
`UPDATE ... FROM (VALUES ...) ... RETURNING` per kind of claim (fresh, or a child's next poll),
run together with the batch's reports (runtime.store.fanout.branch_reports). A step attempt is won
by at most one claim: duplicates within a batch lose before the statement (the first one
queued wins), duplicates across batches lose the conditional update.

A batch of nothing but fresh claims may commit without waiting for the WAL flush
(`wait_for_flush=False`): a claim is not a result. Losing one in a server crash returns its
step to pending, so the branch's report is stale and the sweep publishes the branch again,
which an at-least-once body allows; the report, which waits, flushes the claim with it.
Branches that must not run twice make their claim durable before the body
(runtime.fanout.branch).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.utils import timezone
from django.utils.dateparse import parse_datetime

from runtime import conf
from runtime.core.branches import BranchClaim, ClaimReceipt
from runtime.core.versions import UNPINNED
from runtime.models import ACTIVE_RUN_STATES, Run, Step, StepStatus
from runtime.payloads.packing import unpack
from runtime.registry import versions
from runtime.store.dialect import (
    Statement,
    as_uuid,
    cast,
    chunks,
    in_list,
    postgres,
    run_ids_in,
    time_param,
    uuid_param,
    values_cte,
)
from runtime.store.direct import pooled

_Key = tuple[tuple[uuid.UUID, int], bool]


@dataclass
class ClaimBatch:
    """The statements that take a batch of claims, and how to read their rows back."""

    claims: Sequence[BranchClaim]
    now: datetime
    wait_for_flush: bool = True  # False: fresh claims commit with synchronous_commit off
    statements: list[Statement] = field(default_factory=list)
    _kinds: list[bool] = field(default_factory=list)  # `continuing` of each statement
    _first: dict[_Key, BranchClaim] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for c in self.claims:
            self._first.setdefault(((c.step_id, c.attempt), c.continuing), c)
        lease_until = self.now + timedelta(seconds=conf.get().LEASE_SECONDS)
        for continuing in (False, True):
            batch = [c for (_, cont), c in self._first.items() if cont is continuing]
            # Sorted by id: one lock order for every writer.
            batch.sort(key=lambda c: c.step_id.hex)
            flush = self.wait_for_flush or continuing
            if postgres() and pooled():
                if batch:
                    self.statements.append(
                        _function_call(batch, continuing, self.now, lease_until, flush)
                    )
                    self._kinds.append(continuing)
                continue
            for part in chunks(batch, 3):
                self.statements.append(_statement(part, continuing, self.now, lease_until, flush))
                self._kinds.append(continuing)

    def receipts(self, results: Sequence[Sequence[tuple[Any, ...]]]) -> list[ClaimReceipt]:
        """Each claim's receipt, in order, from the rows of `statements` (its duplicates in
        the batch lose)."""
        won: dict[_Key, ClaimReceipt] = {}
        for continuing, rows in zip(self._kinds, results, strict=True):
            for sid, attempt, name, kind, raw, started in rows:
                data = unpack(json.loads(raw) if isinstance(raw, str) else raw)
                started_at = _started_at(started, self.now) if continuing else self.now
                key = ((as_uuid(sid), int(attempt)), continuing)
                won[key] = ClaimReceipt(True, name, kind, data or {}, started_at)
        receipts: list[ClaimReceipt] = []
        for c in self.claims:
            key = ((c.step_id, c.attempt), c.continuing)
            value = won.get(key) if self._first[key] is c else None
            receipts.append(value or ClaimReceipt())
        return receipts


def _function_call(
    claims: Sequence[BranchClaim],
    continuing: bool,
    now: datetime,
    lease_until: datetime,
    wait_for_flush: bool,
) -> Statement:
    """The claims as one call of the migration's `fanfold_claim_branches` (behind a pooler):
    its plan is kept per server session, where a prepared statement cannot be.
    Without `wait_for_flush` the function sets synchronous_commit off for its own (autocommit)
    transaction, without a round trip of its own."""
    sql = (
        "SELECT * FROM fanfold_claim_branches(%s::uuid[], %s::uuid[], %s::integer[], "
        "%s::bigint[], %s, %s, %s, %s, %s::text[], %s::text[])"
    )
    params = [
        [c.run_id for c in claims], [c.step_id for c in claims], [c.attempt for c in claims],
        [c.owner for c in claims],
        continuing, now, lease_until, wait_for_flush, [str(s) for s in ACTIVE_RUN_STATES],
        _served(),
    ]  # fmt: skip
    return sql, params


def _statement(
    claims: Sequence[BranchClaim],
    continuing: bool,
    now: datetime,
    lease_until: datetime,
    wait_for_flush: bool = True,
) -> Statement:
    """The claims as one UPDATE: prepared, straight to the database; on SQLite."""
    step_table, run_table = Step._meta.db_table, Run._meta.db_table
    attempt = cast("v_attempt", "integer")
    lease = time_param(lease_until)
    owner = cast("v_owner", "bigint")
    if continuing:
        sets, set_params = f"wake_at = %s, lease_owner = {owner}", [lease]
        cond = f"status = %s AND attempt = {attempt}"
        cond_params: list[Any] = [StepStatus.RUNNING.value]
    else:
        sets = (
            f"status = %s, attempt = {attempt}, started_at = %s, wake_at = %s, "
            f"lease_owner = {owner}"
        )
        set_params = [StepStatus.RUNNING.value, time_param(now), lease]
        cond = f"attempt = {attempt} - 1 AND (status = %s OR (status = %s AND wake_at < %s))"
        cond_params = [StepStatus.PENDING.value, StepStatus.RUNNING.value, time_param(now)]
    states = ", ".join(["%s"] * len(ACTIVE_RUN_STATES))
    served, served_params = in_list(_served())
    cte, params = values_cte(
        "v",
        ["v_id", "v_attempt", "v_owner"],
        [(uuid_param(c.step_id), c.attempt, c.owner) for c in claims],
    )
    # The run ids let PostgreSQL read only their partitions, not every week's id index.
    runs, run_params = run_ids_in(step_table, {c.run_id for c in claims})
    source = "v"
    if not wait_for_flush and postgres():
        # SET LOCAL in the statement's own (autocommit) transaction: only this commit is
        # asynchronous, and it needs no round trip of its own.
        cte += ", no_flush AS (SELECT set_config('synchronous_commit', 'off', true)) "
        source = "v, no_flush"
    sql = (
        f"{cte}UPDATE {step_table} SET {sets} FROM {source} "
        f"WHERE id = {cast('v_id', 'uuid')} AND {cond} AND {runs} AND EXISTS "
        f"(SELECT 1 FROM {run_table} r WHERE r.id = {step_table}.run_id "
        f"AND r.status IN ({states}) AND r.app_version IN ({served})) "
        "RETURNING id, attempt, name, kind, input, started_at"
    )
    states_params = map(str, ACTIVE_RUN_STATES)
    return sql, [
        *params, *set_params, *cond_params, *run_params, *states_params, *served_params,
    ]  # fmt: skip


def _served() -> list[str]:
    """The versions whose runs' branches this process may claim (runtime.registry.versions)."""
    return [UNPINNED, *versions.served()]


def _started_at(value: Any, default: datetime) -> datetime:
    """A started_at column read back: aware on PostgreSQL, naive UTC or text on SQLite."""
    if isinstance(value, str):
        value = parse_datetime(value)
    if not isinstance(value, datetime):
        return default
    return value if timezone.is_aware(value) else timezone.make_aware(value, UTC)
