"""The step table's columns as the checkpoint statements write them, derived from the model."""

from __future__ import annotations

from functools import cache
from typing import NamedTuple

from runtime.core.writes import StepRow
from runtime.models import Step

JSON_COLUMNS = ("result", "error", "input", "payload")


class StepColumn(NamedTuple):
    """A column of the step table as the checkpoint statements write it."""

    name: str
    attname: str | None  # the StepRow attribute holding its value; None for run_id
    sql_type: str  # PostgreSQL's, for casts and recordset definitions (text for every varchar)
    is_json: bool
    param: str  # its parameter form (runtime.store.dialect.adapter): uuid, time, json or plain


# The step table's field types as PostgreSQL names them, whatever the connection's vendor.
_PG_TYPES = {
    "UUIDField": "uuid",
    "ForeignKey": "uuid",
    "CharField": "text",
    "TextField": "text",
    "DateTimeField": "timestamp with time zone",
    "JSONField": "jsonb",
    "PositiveIntegerField": "integer",
    "IntegerField": "integer",
    "PositiveSmallIntegerField": "smallint",
    "BigIntegerField": "bigint",
}
_PARAMS = {"uuid": "uuid", "timestamp with time zone": "time", "jsonb": "json"}


@cache
def step_columns() -> tuple[StepColumn, ...]:
    """The step table's columns a checkpoint writes, in the model's order, derived from the
    model: those a StepRow carries (the branch claim alone writes `lease_owner`)."""
    columns = []
    for field in Step._meta.concrete_fields:
        if field.attname != "run_id" and field.attname not in StepRow.__dataclass_fields__:
            continue
        internal = field.get_internal_type()
        db_type = _PG_TYPES.get(internal, "integer")
        columns.append(
            StepColumn(
                str(field.column),
                None if field.attname == "run_id" else field.attname,
                db_type,
                field.column in JSON_COLUMNS,
                _PARAMS.get(db_type, "plain"),
            )
        )
    return tuple(columns)
