"""The PostgreSQL fast path of the checkpoint sink: one round trip per batch.

The portable path (runtime.store.orm) spends five round trips on a batch (BEGIN, the run UPDATE,
the step upsert, the event insert, COMMIT). Here each run's part of a batch is ONE statement:
a guarded `UPDATE ... RETURNING last_seq` in a data-modifying CTE, the step upserts, and the
event inserts whose seqs are computed from that CTE's new `last_seq`. A guard that matched no
row divides by zero, which fails the statement (and the batch) so nothing is written; the
caller then writes the batch again through the portable path, which reports exactly which
guard failed. Statements of the same shape have the same text and are prepared (see
runtime.store.connection), so PostgreSQL parses and plans each shape once per connection.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from functools import cache
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus
from psycopg.types.json import Jsonb

from runtime.models import Event, FanoutGroup, Step
from runtime.store import pg_json_rows
from runtime.store.columns import step_columns
from runtime.store.connection import raw_connection
from runtime.store.parts import RunPart
from runtime.store.runs import run_update_statement


def _jsonb(value: Any) -> Any:
    return None if value is None else Jsonb(value)


# Beyond this the statement would pass PostgreSQL's 65,535-parameter limit: the portable path.
MAX_PARAMETERS = 60_000


@cache
def _steps_sql(rows: int, update_fields: tuple[str, ...]) -> str:
    row = "(" + ", ".join(f"%s::{c.sql_type}" for c in step_columns()) + ")"
    columns = ", ".join(c.name for c in step_columns())
    updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in update_fields)
    return (
        f"s AS (INSERT INTO {Step._meta.db_table} ({columns}) "
        f"VALUES {', '.join([row] * rows)} ON CONFLICT (run_id, position) DO UPDATE SET {updates})"
    )


@cache
def _events_sql(rows: int) -> str:
    values = ", ".join(["(%s::integer, %s::text, %s::uuid, %s::jsonb, %s::timestamptz)"] * rows)
    return (
        f"e AS (INSERT INTO {Event._meta.db_table} "
        "(run_id, seq, type, step_id, payload, created_at) "
        "SELECT %s::uuid, u.last_seq - v.back, v.type, v.step_id, v.payload, v.created_at "
        f"FROM u, (VALUES {values}) AS v(back, type, step_id, payload, created_at))"
    )


def group_statement(
    g: RunPart, now: datetime, update_fields: Sequence[str]
) -> tuple[str, list[Any]]:
    """The one statement writing one run's part of a batch.

    Its text depends only on the part's shape, so the few shapes a workload has are built once
    (and prepared once per connection); per call only the parameters are gathered.
    """
    sql, params = run_update_statement(
        g.guard,
        len(g.events),
        g.wakes,
        g.patch,
        now,
        json_param=lambda _c, v: _jsonb(v),
        run_param=g.run_id,
    )
    ctes = [f"u AS ({sql})"]
    if g.steps:
        ctes.append(_steps_sql(len(g.steps), tuple(update_fields)))
        run_id = g.run_id
        columns = step_columns()
        for step_row in g.steps.values():
            for column in columns:
                if column.attname is None:
                    params.append(run_id)
                    continue
                value = getattr(step_row, column.attname)
                params.append(_jsonb(value) if column.is_json else value)
    if g.events:
        ctes.append(_events_sql(len(g.events)))
        params.append(g.run_id)
        n = len(g.events)
        for i, draft in enumerate(g.events):
            params.extend(
                (n - 1 - i, str(draft.type), draft.step_id, Jsonb(draft.payload), draft.at)
            )
    # Zero rows from the guarded UPDATE must fail the statement: divide by the count.
    return f"WITH {', '.join(ctes)} SELECT 1 / (SELECT count(*) FROM u)::int", params


def fanout_groups_statement(g: RunPart, check_at: datetime) -> tuple[str, list[Any]]:
    """Insert a run's new fan-out groups; a replayed insert of the same group does nothing."""
    row = (
        "(%s::uuid, %s::uuid, %s, %s, %s, 0, 0, %s::integer, %s, %s::timestamptz, %s::timestamptz)"
    )
    params: list[Any] = []
    for f in g.fanouts:
        params.extend(
            (f.id, g.run_id, f.first_position, f.total, f.released, f.need, f.failure_limit,
             f.created_at, check_at)
        )  # fmt: skip
    sql = (
        f"INSERT INTO {FanoutGroup._meta.db_table} (id, run_id, first_position, total, "
        "released, succeeded, failed, need, failure_limit, created_at, check_at) "
        f"VALUES {', '.join([row] * len(g.fanouts))} "
        "ON CONFLICT (run_id, first_position) DO NOTHING"
    )
    return sql, params


def write_parts(
    groups: Sequence[RunPart], now: datetime, update_fields: Sequence[str], check_at: datetime
) -> bool:
    """Write a batch atomically in one round trip; False when a run's part is too big.

    The plain parts of several runs, or one plain part with many rows (a fan-out's start),
    go as one statement with JSON rows (runtime.store.pg_json_rows); every other part has its own
    statement. One statement runs alone in autocommit; several run between BEGIN and COMMIT
    in one pipeline. All of them are prepared.
    """
    plain = [g for g in groups if pg_json_rows.is_plain(g)]
    if not pg_json_rows.worth_combining(plain):
        plain = []
    statements = [pg_json_rows.runs_statement(plain, now, update_fields)] if plain else []
    combined = {id(g) for g in plain}
    statements += [group_statement(g, now, update_fields) for g in groups if id(g) not in combined]
    statements += [fanout_groups_statement(g, check_at) for g in groups if g.fanouts]
    if any(len(params) > MAX_PARAMETERS for _, params in statements):
        return False
    raw = raw_connection()
    if not raw.autocommit:
        raise RuntimeError("the one-statement path needs an autocommit connection")
    if len(statements) == 1:
        with psycopg.Cursor(raw) as cursor:
            cursor.execute(*statements[0], prepare=True)
        return True
    try:
        with raw.pipeline(), psycopg.Cursor(raw) as cursor:
            cursor.execute("BEGIN")
            for sql, params in statements:
                cursor.execute(sql, params, prepare=True)
            cursor.execute("COMMIT")
    except psycopg.Error:
        if raw.info.transaction_status != TransactionStatus.IDLE and not raw.closed:
            raw.execute("ROLLBACK")
        raise
    return True
