"""Branch claims, database side: a batch of claims taken with one conditional update.

Concurrent branch threads of a worker group-commit their claims through the checkpoint writer
(a `BranchClaim` payload); `claim_branches_txn` runs inside the sink's batch transaction and
takes them all with one `UPDATE ... FROM (VALUES ...) ... RETURNING` per kind of claim. A step
attempt is won by at most one claim: duplicates within a batch lose before the statement (the
first one queued wins), duplicates across batches lose the conditional update.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import connection
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from runtime import conf
from runtime.branch_sql import as_uuid, cast, chunks, column_value, values_cte
from runtime.core.fanin import ClaimReceipt
from runtime.core.writes import BranchClaim
from runtime.models import ACTIVE_RUN_STATES, Run, Step, StepStatus

_Key = tuple[uuid.UUID, int]


def claim_branches_txn(claims: Sequence[BranchClaim], now: datetime) -> list[Callable[[], None]]:
    """Take what can be taken of `claims`; returns the receipt fills to run after commit."""
    lease_until = now + timedelta(seconds=conf.get().LEASE_SECONDS)
    first: dict[tuple[_Key, bool], BranchClaim] = {}
    for c in claims:
        first.setdefault(((c.step_id, c.attempt), c.continuing), c)
    won: dict[tuple[_Key, bool], ClaimReceipt] = {}
    for continuing in (False, True):
        batch = [c for (_, cont), c in first.items() if cont is continuing]
        for key, receipt in _take(batch, continuing, now, lease_until).items():
            won[key, continuing] = receipt
    fills: list[Callable[[], None]] = []
    for c in claims:
        key = ((c.step_id, c.attempt), c.continuing)
        value = won.get(key) if first[key] is c else None
        fills.append(_filler(c.receipt, value or ClaimReceipt()))
    return fills


def _filler(target: ClaimReceipt, value: ClaimReceipt) -> Callable[[], None]:
    def fill() -> None:
        target.won = value.won
        target.name, target.kind = value.name, value.kind
        target.input, target.started_at = value.input, value.started_at

    return fill


def _take(
    claims: list[BranchClaim], continuing: bool, now: datetime, lease_until: datetime
) -> dict[_Key, ClaimReceipt]:
    """One conditional update for these claims; returns the winners by (step, attempt)."""
    if not claims:
        return {}
    step_table, run_table = Step._meta.db_table, Run._meta.db_table
    lease = column_value(Step, "wake_at", lease_until)
    if continuing:
        sets, set_params = "wake_at = %s", [lease]
        cond = f"status = %s AND attempt = {cast('v_attempt', 'integer')}"
        cond_params: list[Any] = [StepStatus.RUNNING.value]
    else:
        sets = (
            f"status = %s, attempt = {cast('v_attempt', 'integer')}, started_at = %s, wake_at = %s"
        )
        set_params = [StepStatus.RUNNING.value, column_value(Step, "started_at", now), lease]
        cond = (
            f"attempt = {cast('v_attempt', 'integer')} - 1 "
            "AND (status = %s OR (status = %s AND wake_at < %s))"
        )
        cond_params = [
            StepStatus.PENDING.value,
            StepStatus.RUNNING.value,
            column_value(Step, "wake_at", now),
        ]
    states = ", ".join(["%s"] * len(ACTIVE_RUN_STATES))
    rows = [
        (column_value(Step, "id", c.step_id), c.attempt)
        for c in sorted(claims, key=lambda c: c.step_id.hex)  # one lock order for every writer
    ]
    won: dict[_Key, ClaimReceipt] = {}
    for part in chunks(rows, 2):
        cte, params = values_cte("v", ["v_id", "v_attempt"], part)
        sql = (
            f"{cte}UPDATE {step_table} SET {sets} FROM v "
            f"WHERE id = {cast('v_id', 'uuid')} AND {cond} AND EXISTS "
            f"(SELECT 1 FROM {run_table} r WHERE r.id = {step_table}.run_id "
            f"AND r.status IN ({states})) "
            "RETURNING id, attempt, name, kind, input, started_at"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [*params, *set_params, *cond_params, *map(str, ACTIVE_RUN_STATES)])
            for sid, attempt, name, kind, raw, started in cursor.fetchall():
                data = json.loads(raw) if isinstance(raw, str) else raw
                started_at = _started_at(started, now) if continuing else now
                won[as_uuid(sid), int(attempt)] = ClaimReceipt(
                    True, name, kind, data or {}, started_at
                )
    return won


def _started_at(value: Any, default: datetime) -> datetime:
    """A started_at column read back: aware on PostgreSQL, naive UTC or text on SQLite."""
    if isinstance(value, str):
        value = parse_datetime(value)
    if not isinstance(value, datetime):
        return default
    return value if timezone.is_aware(value) else timezone.make_aware(value, UTC)
