"""The PostgreSQL fast path of the checkpoint sink: a whole batch in ONE statement.

The portable sink (runtime.store) spends five round trips on a batch (BEGIN, the run UPDATE,
the step upsert, the event insert, COMMIT). Here the batch is a single statement run in
autocommit, which PostgreSQL applies atomically: per run a guarded `UPDATE ... RETURNING
last_seq` in a data-modifying CTE, the step upserts, and the event inserts whose seqs are
computed from that CTE's new `last_seq`. A guard that matched no row divides by zero, which
fails the statement and so writes nothing; the caller then writes the batch again through
the portable path, which reports exactly which guard failed. Same shape, same SQL text, so
psycopg prepares the statement after a few batches and PostgreSQL stops planning it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from functools import cache
from typing import Any

import psycopg
from django.db import connection
from psycopg.types.json import Jsonb

from runtime.models import Event, Step
from runtime.runsql import JSON_COLUMNS, run_update_statement


def _jsonb(value: Any) -> Any:
    return None if value is None else Jsonb(value)


_STEP_FIELDS = list(Step._meta.concrete_fields)
# Beyond this the statement would pass PostgreSQL's 65,535-parameter limit: the portable path.
MAX_PARAMETERS = 60_000


@cache
def _step_cast(field_name: str) -> str:
    field = Step._meta.get_field(field_name)
    db_type = str(field.db_type(connection) or "text")
    return "text" if db_type.startswith("varchar") else db_type


def _step_values_sql(rows: int) -> str:
    row = "(" + ", ".join(f"%s::{_step_cast(f.name)}" for f in _STEP_FIELDS) + ")"
    return ", ".join([row] * rows)


_EVENT_ROW = "(%s::integer, %s::text, %s::uuid, %s::jsonb, %s::timestamptz)"


def batch_statement(
    groups: Sequence[Any], now: datetime, update_fields: Sequence[str]
) -> tuple[str, list[Any]]:
    """The one statement writing `groups` (runtime.store._RunGroup), and its parameters."""
    ctes: list[str] = []
    params: list[Any] = []
    checks: list[str] = []
    updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in update_fields)
    columns = ", ".join(str(f.column) for f in _STEP_FIELDS)
    for k, g in enumerate(groups):
        sql, run_params = run_update_statement(
            g.guard,
            len(g.events),
            g.wakes,
            g.patch,
            now,
            json_param=lambda _c, v: _jsonb(v),
            run_param=g.run_id,
        )
        ctes.append(f"u{k} AS ({sql})")
        params.extend(run_params)
        checks.append(f"1 / (SELECT count(*) FROM u{k})::int")
        if g.steps:
            ctes.append(
                f"s{k} AS (INSERT INTO {Step._meta.db_table} ({columns}) "
                f"VALUES {_step_values_sql(len(g.steps))} ON CONFLICT (id) DO UPDATE SET {updates})"
            )
            for step_row in g.steps.values():
                values = {**_row_values(step_row), "run_id": g.run_id}
                for f in _STEP_FIELDS:
                    value = values.get(f.attname)
                    params.append(_jsonb(value) if f.column in JSON_COLUMNS else value)
        if g.events:
            rows = ", ".join([_EVENT_ROW] * len(g.events))
            ctes.append(
                f"e{k} AS (INSERT INTO {Event._meta.db_table} "
                "(run_id, seq, type, step_id, payload, created_at) "
                f"SELECT %s::uuid, u{k}.last_seq - v.back, v.type, v.step_id, v.payload, "
                f"v.created_at FROM u{k}, (VALUES {rows}) "
                "AS v(back, type, step_id, payload, created_at))"
            )
            params.append(g.run_id)
            n = len(g.events)
            for i, draft in enumerate(g.events):
                params.extend(
                    (n - 1 - i, str(draft.type), draft.step_id, Jsonb(draft.payload), draft.at)
                )
    # Zero rows from a guarded UPDATE must fail the statement: divide by the count.
    sql = f"WITH {', '.join(ctes)} SELECT {' + '.join(checks)}"
    return sql, params


def write_one_statement(groups: Sequence[Any], now: datetime, update_fields: Sequence[str]) -> bool:
    """Write `groups` in one atomic statement; False when the batch is too big for one."""
    sql, params = batch_statement(groups, now, update_fields)
    if len(params) > MAX_PARAMETERS:
        return False
    connection.ensure_connection()
    raw = connection.connection
    if not raw.autocommit:
        raise RuntimeError("the one-statement path needs an autocommit connection")
    with psycopg.Cursor(raw) as cursor:
        cursor.execute(sql, params)
    return True


def _row_values(row: Any) -> dict[str, Any]:
    return {name: getattr(row, name) for name in row.__slots__}
