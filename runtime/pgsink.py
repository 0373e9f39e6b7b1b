"""The PostgreSQL fast path of the checkpoint sink: one round trip per batch.

The portable sink (runtime.store) spends five round trips on a batch (BEGIN, the run
UPDATE, the step upsert, the event insert, COMMIT). Here the same statements go out in one
psycopg pipeline: the guard of each run becomes a statement that fails when the guarded
UPDATE matched no row, the event seqs are computed in SQL from the run's updated `last_seq`,
and COMMIT rides in the same pipeline. Any error rolls the whole batch back; the caller then
replays the batch through the portable path, which reports exactly which guard failed.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from functools import cache
from typing import Any

import psycopg
from django.db import connection
from psycopg.pq import TransactionStatus
from psycopg.types.json import Jsonb

from runtime.models import Event, Run, Step
from runtime.runsql import JSON_COLUMNS, run_update_statement


def _jsonb(value: Any) -> Any:
    return None if value is None else Jsonb(value)


_STEP_FIELDS = list(Step._meta.concrete_fields)
_ROWS_PER_STATEMENT = 1000
_EVENT_ROW = "(%s::uuid, %s::integer, %s::text, %s::uuid, %s::jsonb, %s::timestamptz)"


@cache
def _step_upsert_sql(rows: int, update_fields: tuple[str, ...]) -> str:
    # Multi-row VALUES plans faster than unnest() of typed arrays for the small batches that
    # dominate (one step per sequential checkpoint), and stays fine for a fan-out's thousand.
    columns = ", ".join(str(f.column) for f in _STEP_FIELDS)
    row = "(" + ", ".join(["%s"] * len(_STEP_FIELDS)) + ")"
    updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in update_fields)
    return (
        f"INSERT INTO {Step._meta.db_table} ({columns}) VALUES {', '.join([row] * rows)} "
        f"ON CONFLICT (id) DO UPDATE SET {updates}"
    )


@cache
def _event_insert_sql(rows: int) -> str:
    # Seqs come from the run's last_seq, already advanced by this transaction's run UPDATE.
    return (
        f"INSERT INTO {Event._meta.db_table} (run_id, seq, type, step_id, payload, created_at) "
        "SELECT e.run_id, r.last_seq - e.back, e.type, e.step_id, e.payload, e.created_at "
        f"FROM (VALUES {', '.join([_EVENT_ROW] * rows)}) "
        "AS e(run_id, back, type, step_id, payload, created_at) "
        f"JOIN {Run._meta.db_table} r ON r.id = e.run_id"
    )


def write_pipelined(groups: Sequence[Any], now: datetime, update_fields: Sequence[str]) -> None:
    """Write `groups` (runtime.store._RunGroup) in one transaction, one round trip."""
    connection.ensure_connection()
    raw = connection.connection
    statements: list[tuple[str, list[Any]]] = []
    step_params: list[Any] = []
    event_params: list[Any] = []
    for g in groups:
        sql, params = run_update_statement(
            g.guard,
            len(g.events),
            g.wakes,
            g.patch,
            now,
            json_param=lambda _c, v: _jsonb(v),
            run_param=g.run_id,
        )
        # Zero rows from the guarded UPDATE must abort the transaction: divide by the count.
        statements.append((f"WITH u AS ({sql}) SELECT 1 / (SELECT count(*) FROM u)::int", params))
        for step_row in g.steps.values():
            values = {**_row_values(step_row), "run_id": g.run_id}
            for f in _STEP_FIELDS:
                value = values.get(f.attname)
                step_params.append(_jsonb(value) if f.column in JSON_COLUMNS else value)
        n = len(g.events)
        for i, draft in enumerate(g.events):
            event_params.extend(
                (
                    g.run_id,
                    n - 1 - i,
                    str(draft.type),
                    draft.step_id,
                    Jsonb(draft.payload),
                    draft.at,
                )
            )
    width = len(_STEP_FIELDS)
    for chunk in _chunks(step_params, width):
        statements.append((_step_upsert_sql(len(chunk) // width, tuple(update_fields)), chunk))
    for chunk in _chunks(event_params, 6):
        statements.append((_event_insert_sql(len(chunk) // 6), chunk))
    # Explicit BEGIN/COMMIT statements: psycopg's transaction() block adds a sync of its own.
    try:
        with raw.pipeline(), psycopg.Cursor(raw) as cursor:
            cursor.execute("BEGIN")
            for sql, params in statements:
                cursor.execute(sql, params)
            cursor.execute("COMMIT")
    except psycopg.Error:
        if raw.info.transaction_status != TransactionStatus.IDLE and not raw.closed:
            raw.execute("ROLLBACK")
        raise


def _chunks(params: list[Any], width: int, rows: int = _ROWS_PER_STATEMENT) -> list[list[Any]]:
    """Split flat row parameters so no statement passes PostgreSQL's 65,535-parameter limit."""
    step = width * rows
    return [params[i : i + step] for i in range(0, len(params), step)]


def _row_values(row: Any) -> dict[str, Any]:
    return {name: getattr(row, name) for name in row.__slots__}
