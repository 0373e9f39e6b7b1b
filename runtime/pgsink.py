"""The PostgreSQL fast path of the checkpoint sink: one round trip per batch.

The portable sink (runtime.store) spends five round trips on a batch (BEGIN, the run
UPDATE, the step upsert, the event insert, COMMIT). Here the same statements go out in one
psycopg pipeline: the guard of each run becomes a statement that fails when the guarded
UPDATE matched no row, the event seqs are computed in SQL from the run's updated `last_seq`,
and COMMIT rides in the same pipeline. Any error rolls the whole batch back; the caller then
replays the batch through the portable path, which reports exactly which guard failed.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from functools import cache
from typing import Any

from django.db import connection
from psycopg.types.json import Jsonb

from runtime.core.writes import LeaseGuard, RunPatch, SuspendGuard, UnfinishedGuard
from runtime.models import ACTIVE_RUN_STATES, Event, Run, Step

_JSON_COLUMNS = ("result", "error", "input", "payload")


def run_update_statement(
    run_id: uuid.UUID,
    guard: Any,
    events: int,
    wakes: int,
    patch: RunPatch | None,
    now: datetime,
    lease_until: datetime,
    *,
    json_param: Any,
    run_param: Any,
) -> tuple[str, list[Any]]:
    """The guarded `UPDATE runtime_run ... RETURNING last_seq` of one run in a batch."""
    sets = ["last_seq = last_seq + %s", "updated_at = %s"]
    params: list[Any] = [events, now]
    if wakes:
        sets.append("wakeups = wakeups + %s")
        params.append(wakes)
    patch = patch or RunPatch()
    for column, value in patch.columns().items():
        sets.append(f"{column} = %s")
        params.append(json_param(column, value) if column in _JSON_COLUMNS else value)
    where = ["id = %s"]
    where_params: list[Any] = [run_param]
    if isinstance(guard, LeaseGuard | SuspendGuard):
        where.append("lease_token = %s")
        where_params.append(guard.token)
        if isinstance(guard, SuspendGuard):
            where.append("wakeups = %s")
            where_params.append(guard.wakeups)
    elif isinstance(guard, UnfinishedGuard):
        where.append(f"status IN ({', '.join(['%s'] * len(ACTIVE_RUN_STATES))})")
        where_params.extend(str(s) for s in ACTIVE_RUN_STATES)
    if patch.release_lease:
        sets.extend(["lease_token = NULL", "lease_expires_at = NULL"])
    elif isinstance(guard, LeaseGuard | SuspendGuard):
        sets.append("lease_expires_at = %s")
        params.append(lease_until)
    table = Run._meta.db_table
    sql = f"UPDATE {table} SET {', '.join(sets)} WHERE {' AND '.join(where)} RETURNING last_seq"
    return sql, params + where_params


def _jsonb(value: Any) -> Any:
    return None if value is None else Jsonb(value)


_STEP_FIELDS = list(Step._meta.concrete_fields)


@cache
def _step_upsert_sql(update_fields: tuple[str, ...]) -> str:
    columns = ", ".join(str(f.column) for f in _STEP_FIELDS)
    arrays = ", ".join(
        f"%s::{_array_type(f.db_type(connection) or 'text')}[]" for f in _STEP_FIELDS
    )
    updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in update_fields)
    return (
        f"INSERT INTO {Step._meta.db_table} ({columns}) SELECT * FROM unnest({arrays}) "
        f"ON CONFLICT (id) DO UPDATE SET {updates}"
    )


def _array_type(db_type: str) -> str:
    # varchar(n) arrays cast fine as text[]; serial-ish types do not occur here.
    return "text" if db_type.startswith("varchar") else db_type


_EVENT_SQL = (
    f"INSERT INTO {Event._meta.db_table} (run_id, seq, type, step_id, payload, created_at) "
    "SELECT e.run_id, r.last_seq - e.back, e.type, e.step_id, e.payload, e.created_at "
    "FROM unnest(%s::uuid[], %s::integer[], %s::text[], %s::uuid[], %s::jsonb[], "
    "%s::timestamptz[]) AS e(run_id, back, type, step_id, payload, created_at) "
    f"JOIN {Run._meta.db_table} r ON r.id = e.run_id"
)


class GuardFailed(Exception):
    """A guarded run UPDATE matched no row (the batch rolled back)."""


def write_pipelined(
    groups: Sequence[Any], now: datetime, lease_until: datetime, update_fields: Sequence[str]
) -> None:
    """Write `groups` (runtime.store._RunGroup) in one transaction, one round trip."""
    connection.ensure_connection()
    raw = connection.connection
    step_columns: list[list[Any]] = [[] for _ in _STEP_FIELDS]
    ev: list[list[Any]] = [[], [], [], [], [], []]
    statements: list[tuple[str, list[Any]]] = []
    for g in groups:
        sql, params = run_update_statement(
            g.run_id,
            g.guard,
            len(g.events),
            g.wakes,
            g.patch,
            now,
            lease_until,
            json_param=lambda _c, v: _jsonb(v),
            run_param=g.run_id,
        )
        # Zero rows from the guarded UPDATE must abort the transaction: divide by the count.
        statements.append((f"WITH u AS ({sql}) SELECT 1 / (SELECT count(*) FROM u)::int", params))
        for row in g.steps.values():
            values = {**_row_values(row), "run_id": g.run_id}
            for i, f in enumerate(_STEP_FIELDS):
                value = values.get(f.attname)
                step_columns[i].append(_jsonb(value) if f.column in _JSON_COLUMNS else value)
        n = len(g.events)
        for i, draft in enumerate(g.events):
            ev[0].append(g.run_id)
            ev[1].append(n - 1 - i)
            ev[2].append(str(draft.type))
            ev[3].append(draft.step_id)
            ev[4].append(Jsonb(draft.payload))
            ev[5].append(draft.at)
    with raw.pipeline(), raw.transaction(), raw.cursor() as cursor:
        for sql, params in statements:
            cursor.execute(sql, params)
        if step_columns[0]:
            cursor.execute(_step_upsert_sql(tuple(update_fields)), step_columns)
        if ev[0]:
            cursor.execute(_EVENT_SQL, ev)


def _row_values(row: Any) -> dict[str, Any]:
    return {name: getattr(row, name) for name in row.__slots__}
