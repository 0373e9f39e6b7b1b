"""The statements of `fanfold rekey`: payload columns read as stored, written back if unchanged.

A batch is read by key order after the last key seen; each changed value is written back by a
conditional UPDATE that matches the text it was read as, so a value a worker rewrote meanwhile
is left as the worker wrote it (the next `rekey` takes it).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from django.db import connection, models

from runtime.models import Event, Run, Step, StreamChunk
from runtime.store.dialect import json_param, postgres, uuid_param


@dataclass(frozen=True)
class PayloadTable:
    """A table with payload columns: its model, and where a row's run id is."""

    model: type[models.Model]
    run_column: str
    columns: tuple[str, ...]

    @property
    def name(self) -> str:
        return str(self.model._meta.db_table)


PAYLOAD_TABLES = (
    PayloadTable(Run, "id", ("input", "result", "error")),
    PayloadTable(Step, "run_id", ("input", "result", "error")),
    PayloadTable(Event, "run_id", ("payload",)),
    PayloadTable(StreamChunk, "run_id", ("value",)),
)


def _text(column: str) -> str:
    return f"{column}::text" if postgres() else column


def read_rows(table: PayloadTable, after: Any, limit: int) -> list[tuple[Any, ...]]:
    """(key, run id, column texts...) of up to `limit` rows after key `after` (None: first)."""
    texts = ", ".join(_text(c) for c in table.columns)
    where = "" if after is None else "WHERE id > %s "
    sql = f"SELECT id, {table.run_column}, {texts} FROM {table.name} {where}ORDER BY id LIMIT %s"
    params: list[Any] = [] if after is None else [_key(after)]
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, limit])
        return list(cursor.fetchall())


def write_back(table: PayloadTable, key: Any, column: str, read_as: str, stored: Any) -> bool:
    """Set one column to `stored` if it still holds the text `read_as`; True if it did."""
    sql = f"UPDATE {table.name} SET {column} = %s WHERE id = %s AND {_text(column)} = %s"
    with connection.cursor() as cursor:
        cursor.execute(sql, [json_param(stored), _key(key), read_as])
        return bool(cursor.rowcount)


def names_file(run_id: uuid.UUID, name: str) -> bool:
    """Whether a payload column of a row of run `run_id` still names the offloaded file `name`
    (its reference holds the name as a JSON string)."""
    escaped = json.dumps(name).replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    with connection.cursor() as cursor:
        for table in PAYLOAD_TABLES:
            like = " OR ".join(f"{_text(c)} LIKE %s ESCAPE '\\'" for c in table.columns)
            cursor.execute(
                f"SELECT 1 FROM {table.name} WHERE {table.run_column} = %s AND ({like}) LIMIT 1",
                [uuid_param(run_id), *[f"%{escaped}%"] * len(table.columns)],
            )
            if cursor.fetchone() is not None:
                return True
    return False


def _key(key: Any) -> Any:
    return key if isinstance(key, int | str) else uuid_param(key)
