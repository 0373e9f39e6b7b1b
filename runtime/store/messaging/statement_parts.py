"""What the one-statement PostgreSQL paths of messages, updates and signals share (their
modules: message_statements, update_statements, signal_statements)."""

from __future__ import annotations

from typing import Any, cast

from django.db import connection
from django.db.models import JSONField, Model

from runtime.models import ACTIVE_RUN_STATES, Run
from runtime.store.connection import raw_connection
from runtime.store.dialect import has_rows
from runtime.store.raw_statements import StatementCursor

RUNS = Run._meta.db_table
ACTIVE = ", ".join(f"'{state}'" for state in ACTIVE_RUN_STATES)  # for `status IN (...)`
# A CTE's SELECT that makes the statement's commit skip the WAL flush (this transaction only).
NO_FLUSH = "SELECT set_config('synchronous_commit', 'off', true)"
# A run woken and due now: `UPDATE {RUNS} r SET {WAKE} ...`, with `now` bound twice.
WAKE = "wakeups = r.wakeups + 1, wake_at = %s, updated_at = %s"


def _json_field(model: type[Model], name: str) -> JSONField[Any]:
    return cast("JSONField[Any]", model._meta.get_field(name))


def decoded(model: type[Model], name: str, stored: Any) -> Any:
    """A JSON column of `model` as the model reads it (a payload's stored form unpacked)."""
    return _json_field(model, name).from_db_value(stored, None, connection)  # type: ignore[arg-type]


def encoded(model: type[Model], name: str, value: Any) -> Any:
    """`value` as the parameter of `model`'s JSON column `name` (for a `%s::jsonb`), as the
    model would save it; a payload goes in its stored form already (StoredForms)."""
    return _json_field(model, name).get_db_prep_save(value, connection)


def prepared(sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
    """Run one statement as a prepared statement (in the current transaction, if any); its
    rows. The messaging tables are partitioned: planning a statement over their partitions
    each time cost more than running it."""
    with connection.wrap_database_errors, StatementCursor(raw_connection()) as cursor:
        cursor.execute(sql, params, prepare=True)
        return cursor.fetchall() if has_rows(cursor) else []
