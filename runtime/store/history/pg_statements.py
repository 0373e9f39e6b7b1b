"""The PostgreSQL fast path of the checkpoint sink: one round trip per batch.

The transaction path (runtime.store.history.history_txn) spends a round trip on BEGIN and on COMMIT
and one per statement. Here each run's part of a batch is ONE statement: the guarded
`UPDATE ... RETURNING last_seq` in a data-modifying CTE, then the same step upserts and event
inserts (runtime.store.history.history_rows) as CTEs, the events' seqs counted from the new
`last_seq`. A guard that matched no row divides by zero, which fails the statement (and the
batch) so nothing is written; the caller then writes the batch again through the transaction
path, which reports exactly which guard failed. Statements of the same shape have the same
text and are prepared (see runtime.store.connection), so PostgreSQL parses and plans each
shape once per connection.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from functools import cache

import psycopg
from psycopg.pq import TransactionStatus

from runtime.store.connection import raw_connection
from runtime.store.dialect import Statement
from runtime.store.history import history_rows, pg_json_rows
from runtime.store.history.parts import RunPart
from runtime.store.messaging.streams import chunk_statements, notify_statement
from runtime.store.raw_statements import StatementCursor, kept_cursor
from runtime.store.runs.run_updates import run_update_statement

# Beyond this the statement would pass PostgreSQL's 65,535-parameter limit: the transaction path.
MAX_PARAMETERS = 60_000


def group_statement(g: RunPart, now: datetime, update_fields: Sequence[str]) -> Statement:
    """The one statement writing one run's part of a batch: the run's UPDATE, then the rows
    of runtime.store.history.history_rows as CTEs.

    Its text depends only on the part's shape, so the few shapes a workload has are built once
    (and prepared once per connection); per call only the parameters are gathered. The same
    text object each time also lets a kept cursor keep its parameter dumpers (psycopg makes
    new ones for a query that is not the last one it ran).
    """
    update_sql, params = run_update_statement(
        g.guard, len(g.events), g.wakes, g.patch, now, run_id=g.run_id, suspend=g.suspend
    )
    steps_sql = None
    if g.steps:
        steps_sql, steps_params = history_rows.steps_statement(
            g.run_id, list(g.steps.values()), update_fields
        )
        params += steps_params
    event_ctes: tuple[str, ...] = ()
    if g.events:
        event_ctes, event_params = history_rows.events_ctes(g.run_id, g.events)
        params += event_params
    return _group_sql(update_sql, steps_sql, event_ctes), params


@cache
def _group_sql(update_sql: str, steps_sql: str | None, event_ctes: tuple[str, ...]) -> str:
    ctes = [f"u AS ({update_sql})"]
    if steps_sql is not None:
        ctes.append(f"s AS ({steps_sql})")
    ctes += event_ctes
    # Zero rows from the guarded UPDATE must fail the statement: divide by the count. The
    # run's wake-ups come back: a suspend learns from them whether a wake-up raced it.
    return (
        f"WITH {', '.join(ctes)} SELECT 1 / (SELECT count(*) FROM u)::int, (SELECT wakeups FROM u)"
    )


def write_parts(
    groups: Sequence[RunPart], now: datetime, update_fields: Sequence[str], check_at: datetime
) -> dict[uuid.UUID, int] | None:
    """Write a batch atomically in one round trip; None when a run's part is too big, else the
    runs whose suspend a wake-up raced (not applied), with their wake-ups.

    The plain parts of several runs, or one plain part with many rows (a fan-out's start),
    go as one statement with JSON rows (runtime.store.history.pg_json_rows); every other part has
    its own statement, and stream chunks theirs (runtime.store.messaging.streams). One statement
    runs alone in autocommit; several run between BEGIN and COMMIT in one pipeline. All of them are
    prepared.
    """
    plain = [g for g in groups if pg_json_rows.is_plain(g)]
    if not pg_json_rows.worth_combining(plain):
        plain = []
    statements = [pg_json_rows.runs_statement(plain, now, update_fields)] if plain else []
    combined = {id(g) for g in plain}
    suspends: dict[int, RunPart] = {}  # by statement: the parts whose answer is read
    for g in groups:
        if id(g) not in combined:
            if g.suspend is not None:
                suspends[len(statements)] = g
            statements.append(group_statement(g, now, update_fields))
    statements += [
        history_rows.fanout_groups_statement(g.run_id, g.fanouts, check_at)
        for g in groups
        if g.fanouts
    ]
    for g in groups:
        if g.chunks:
            statements += chunk_statements(g.run_id, g.chunks, now)
        elif g.announce:  # the chunks' statements notify already
            statements.append(notify_statement(g.run_id))
    if any(len(params) > MAX_PARAMETERS for _, params in statements):
        return None
    raw = raw_connection()
    if not raw.autocommit:
        raise RuntimeError("the one-statement path needs an autocommit connection")
    if len(statements) == 1:
        cursor = kept_cursor(raw)
        cursor.execute(*statements[0], prepare=True)
        return _woken(suspends, {0: cursor})
    answers: dict[int, StatementCursor] = {}  # a suspend's statement has a cursor of its own
    try:
        with raw.pipeline(), StatementCursor(raw) as cursor:
            cursor.execute("BEGIN")
            for n, (sql, params) in enumerate(statements):
                if n in suspends:
                    answers[n] = StatementCursor(raw)
                answers.get(n, cursor).execute(sql, params, prepare=True)
            cursor.execute("COMMIT")
    except psycopg.Error:
        if raw.info.transaction_status != TransactionStatus.IDLE and not raw.closed:
            raw.execute("ROLLBACK")
        raise
    return _woken(suspends, answers)


def _woken(
    suspends: dict[int, RunPart], answers: dict[int, StatementCursor]
) -> dict[uuid.UUID, int]:
    """The runs whose suspend (the part of statement n) a wake-up raced, with their wake-ups."""
    woken: dict[uuid.UUID, int] = {}
    for n, part in suspends.items():
        ((_, wakeups),) = answers[n].fetchall()  # always one row: a guard that failed raised
        if part.suspend_lost(wakeups):
            woken[part.run_id] = wakeups
    return woken
