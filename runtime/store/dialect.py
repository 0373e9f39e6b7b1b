"""Portable SQL pieces for the set-based branch writes (claims and reports).

A batch of branch claims or reports is written as one `UPDATE ... FROM v` joined on a `WITH v(...)
AS (VALUES ...)` table of per-row values. That form runs on PostgreSQL and on SQLite (3.33+,
`RETURNING` 3.35+); only the casts and the parameter forms differ. On PostgreSQL a list of
statements goes out in one psycopg pipeline (one round trip, server-side binding): the run's
row lock is held across as few round trips as possible.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

import psycopg
from django.core.signals import setting_changed
from django.db import connection
from django.dispatch import receiver

from runtime.core.json_text import dumps_json
from runtime.store.connection import raw_connection
from runtime.store.raw_statements import StatementCursor

MAX_PARAMS = 30_000  # below SQLite's default variable limit (32766) and PostgreSQL's (65535)

Statement = tuple[str, list[Any]]


_vendor: str | None = None  # the default database's, looked up once (it is asked per column)


def postgres() -> bool:
    global _vendor
    if _vendor is None:
        _vendor = connection.vendor
    return _vendor == "postgresql"


@receiver(setting_changed)
def _forget_vendor(setting: str, **_: Any) -> None:
    global _vendor
    if setting == "DATABASES":
        _vendor = None


def cast(expr: str, pg_type: str) -> str:
    """`expr::pg_type` on PostgreSQL, `expr` elsewhere."""
    return f"{expr}::{pg_type}" if postgres() else expr


def uuid_param(value: uuid.UUID | None) -> Any:
    """A UUID column's parameter: hex without dashes on SQLite, as Django stores it there."""
    if value is None or postgres():
        return value
    return value.hex


def time_param(value: datetime | None) -> Any:
    """A datetime column's parameter: an aware datetime, or Django's text form on SQLite."""
    if value is None or postgres():
        return value
    return connection.ops.adapt_datetimefield_value(value)


def json_param(value: Any) -> str | None:
    """A JSON column's parameter, on either database: its JSON text (which PostgreSQL reads as
    the `jsonb` its statement casts it to or assigns it to; one C call to send where psycopg's
    `Jsonb` wrapper takes several Python ones). None is SQL NULL, as the ORM writes it."""
    return None if value is None else dumps_json(value)


def same(value: Any) -> Any:
    """The parameter form of a column whose values go as they are."""
    return value


def adapter(column_type: str) -> Callable[[Any], Any]:
    """How a value goes as the parameter of a column of `column_type` ("uuid", "time", "json"
    or anything else) on this database: the one place the parameter forms differ."""
    forms = _POSTGRES_FORMS if postgres() else _OTHER_FORMS
    return forms.get(column_type, same)


_POSTGRES_FORMS: dict[str, Callable[[Any], Any]] = {"json": json_param}
_OTHER_FORMS: dict[str, Callable[[Any], Any]] = {
    "uuid": uuid_param,
    "time": time_param,
    "json": json_param,
}


def in_list(values: Iterable[Any]) -> tuple[str, list[str]]:
    """`%s, %s, ...` for an `IN (...)` of these values, and the values as text parameters."""
    params = [str(v) for v in values]
    return ", ".join(["%s"] * len(params)), params


def run_ids_in(table: str, run_ids: Iterable[uuid.UUID]) -> tuple[str, list[Any]]:
    """`table.run_id IN (...)` of these runs and its parameters: beside a condition on a
    history table's id, it lets PostgreSQL read only the runs' partitions (their weeks)."""
    params = [uuid_param(run_id) for run_id in sorted(set(run_ids), key=str)]
    placeholders = ", ".join([cast("%s", "uuid")] * len(params))
    return f"{table}.run_id IN ({placeholders})", params


def values_cte(
    name: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]
) -> tuple[str, list[Any]]:
    """`WITH name(columns) AS (VALUES (%s, ...), ...)` and its flattened parameters."""
    sql, params = values_list(name, columns, rows)
    return f"WITH {sql} ", params


def values_list(
    name: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]
) -> tuple[str, list[Any]]:
    """`name(columns) AS (VALUES (%s, ...), ...)`, one of several CTEs, and its parameters."""
    row_sql = "(" + ", ".join(["%s"] * len(columns)) + ")"
    sql = f"{name}({', '.join(columns)}) AS (VALUES {', '.join([row_sql] * len(rows))})"
    return sql, [value for row in rows for value in row]


def chunks(rows: Sequence[Any], width: int) -> list[Sequence[Any]]:
    """`rows` split so that no statement binds more than MAX_PARAMS parameters."""
    size = max(MAX_PARAMS // max(width, 1), 1)
    return [rows[i : i + size] for i in range(0, len(rows), size)]


def as_uuid(value: Any) -> uuid.UUID:
    """A UUID column read back: a UUID on PostgreSQL, a hex string on SQLite."""
    return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))


class PipelinedTransaction:
    """A transaction on PostgreSQL whose BEGIN rides in its first pipeline and whose COMMIT
    rides in the pipeline of the `execute(..., last=True)` that ends it.

    Inside `transaction.atomic()` psycopg sends BEGIN and waits for it before the first
    pipeline, and COMMIT is a round trip of its own: a fan-out branch's report took four round
    trips where two carry the same statements. Used as `with PipelinedTransaction() as txn:`
    on a connection in autocommit (no atomic block around it). A body whose last execute was
    not marked `last` is committed on exit; any exception rolls back. `committing` tells
    whether a COMMIT was sent: a connection cut off after that leaves the outcome unknown;
    `committed`, set on a clean exit, whether the block wrote anything and committed it.
    """

    def __init__(self) -> None:
        self.begun = False
        self.committing = False
        self.committed = False

    def __enter__(self) -> PipelinedTransaction:
        if getattr(_local, "transaction", None) is not None:
            raise RuntimeError("a pipelined transaction is already open in this thread")
        _local.transaction = self
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        _local.transaction = None
        if kind is None:
            if self.begun and not self.committing:  # no `last` execute carried the COMMIT
                self.committing = True
                execute([_COMMIT])
            self.committed = self.begun
            return
        raw = connection.connection
        if raw is not None and not raw.closed and raw.info.transaction_status != IDLE:
            try:
                raw.rollback()
            except psycopg.Error:
                connection.close()


_local = threading.local()
_BEGIN: Statement = ("BEGIN", [])
_COMMIT: Statement = ("COMMIT", [])
_FRAMES = {"BEGIN", "COMMIT"}  # sent unprepared: nothing to plan
IDLE = psycopg.pq.TransactionStatus.IDLE


def _framed(statements: Sequence[Statement], last: bool) -> tuple[list[Statement], int, int]:
    """`statements` with the open pipelined transaction's BEGIN and COMMIT added where they
    go, and how many were added before and after them."""
    txn: PipelinedTransaction | None = getattr(_local, "transaction", None)
    if txn is None:
        return list(statements), 0, 0
    framed, before, after = list(statements), 0, 0
    if not txn.begun:
        framed, before, txn.begun = [_BEGIN, *framed], 1, True
    if last:
        framed.append(_COMMIT)
        after, txn.committing = 1, True
    return framed, before, after


def has_rows(cursor: psycopg.Cursor[Any]) -> bool:
    # `cursor.description` would build a Column per column just to say whether there are any.
    result = cursor.pgresult
    return result is not None and result.nfields > 0


def execute(statements: Sequence[Statement], *, last: bool = False) -> list[list[tuple[Any, ...]]]:
    """Run `statements` in order in the current transaction; returns each one's rows.

    On PostgreSQL they share one pipeline (one round trip); elsewhere they run one by one.
    `last` says no statement of the transaction follows (see PipelinedTransaction).
    """
    if not statements:
        return []
    if not postgres():
        results: list[list[tuple[Any, ...]]] = []
        for sql, params in statements:
            with connection.cursor() as cursor:
                cursor.execute(sql, params)
                results.append(list(cursor.fetchall()) if cursor.description else [])
        return results
    framed, before, after = _framed(statements, last)
    raw = raw_connection()
    with connection.wrap_database_errors:
        cursors = []
        try:
            with raw.pipeline():
                for sql, params in framed:
                    pg_cursor = StatementCursor(raw)
                    cursors.append(pg_cursor)
                    pg_cursor.execute(sql, params, prepare=sql not in _FRAMES)
            rows = [c.fetchall() if has_rows(c) else [] for c in cursors]
        finally:
            for c in cursors:
                c.close()
    return rows[before : len(rows) - after]
