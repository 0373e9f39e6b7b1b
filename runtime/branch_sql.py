"""Portable SQL pieces for the set-based branch writes (claims and reports).

A batch of branch claims or reports is written as one `UPDATE ... FROM v` joined on a `WITH v(...)
AS (VALUES ...)` table of per-row values. That form runs on PostgreSQL and on SQLite (3.33+,
`RETURNING` 3.35+); only the casts differ: PostgreSQL needs a type for a column that may hold
only NULLs, SQLite has no `::` and needs none.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from django.db import connection
from django.db.models import Model

MAX_PARAMS = 30_000  # below SQLite's default variable limit (32766) and PostgreSQL's (65535)


def cast(expr: str, pg_type: str) -> str:
    """`expr::pg_type` on PostgreSQL, `expr` elsewhere."""
    return f"{expr}::{pg_type}" if connection.vendor == "postgresql" else expr


def column_value(model: type[Model], column: str, value: Any) -> Any:
    """`value` as the driver wants it for `model.column` (UUIDs as hex on SQLite, JSON, ...)."""
    field = model._meta.get_field(column)
    return field.get_db_prep_save(value, connection)  # type: ignore[union-attr]


def values_cte(
    name: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]
) -> tuple[str, list[Any]]:
    """`WITH name(columns) AS (VALUES (%s, ...), ...)` and its flattened parameters."""
    row_sql = "(" + ", ".join(["%s"] * len(columns)) + ")"
    sql = f"WITH {name}({', '.join(columns)}) AS (VALUES {', '.join([row_sql] * len(rows))}) "
    return sql, [value for row in rows for value in row]


def chunks(rows: Sequence[Any], width: int) -> list[Sequence[Any]]:
    """`rows` split so that no statement binds more than MAX_PARAMS parameters."""
    size = max(MAX_PARAMS // max(width, 1), 1)
    return [rows[i : i + size] for i in range(0, len(rows), size)]


def as_uuid(value: Any) -> uuid.UUID:
    """A UUID column read back: a UUID on PostgreSQL, a hex string on SQLite."""
    return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
