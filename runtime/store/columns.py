"""The step table's columns as the PostgreSQL statements write them, derived from the model."""

from __future__ import annotations

from functools import cache
from typing import NamedTuple

from django.db import connection

from runtime.core.writes import StepRow
from runtime.models import Step

JSON_COLUMNS = ("result", "error", "input", "payload")


class StepColumn(NamedTuple):
    """A column of the step table as the PostgreSQL statements write it."""

    name: str
    attname: str | None  # the StepRow attribute holding its value; None for run_id
    sql_type: str  # for casts and recordset definitions (text for every varchar)
    is_json: bool


@cache
def step_columns() -> tuple[StepColumn, ...]:
    """The step table's columns a checkpoint writes, in the model's order, derived from the
    model: those a StepRow carries (the branch claim alone writes `lease_owner`)."""
    columns = []
    for field in Step._meta.concrete_fields:
        if field.attname != "run_id" and field.attname not in StepRow.__dataclass_fields__:
            continue
        db_type = str(field.db_type(connection) or "text")
        columns.append(
            StepColumn(
                str(field.column),
                None if field.attname == "run_id" else field.attname,
                "text" if db_type.startswith("varchar") else db_type,
                field.column in JSON_COLUMNS,
            )
        )
    return tuple(columns)
