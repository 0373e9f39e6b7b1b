"""The guarded run UPDATE every checkpoint batch starts with, shared by both sink paths."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from functools import cache
from typing import Any, NamedTuple

from django.db import connection

from runtime.core.writes import LeaseGuard, RunPatch, SuspendGuard, UnfinishedGuard
from runtime.models import ACTIVE_RUN_STATES, Run, Step

JSON_COLUMNS = ("result", "error", "input", "payload")


class StepColumn(NamedTuple):
    """A column of the step table as the PostgreSQL statements write it."""

    name: str
    attname: str | None  # the StepRow attribute holding its value; None for run_id
    sql_type: str  # for casts and recordset definitions (text for every varchar)
    is_json: bool


@cache
def step_columns() -> tuple[StepColumn, ...]:
    """The step table's columns, in the model's order, derived from the model."""
    columns = []
    for field in Step._meta.concrete_fields:
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


def run_update_statement(
    guard: Any,
    events: int,
    wakes: int,
    patch: RunPatch | None,
    now: datetime,
    *,
    json_param: Callable[[str, Any], Any],
    run_param: Any,
) -> tuple[str, list[Any]]:
    """The guarded `UPDATE runtime_run ... RETURNING last_seq` of one run in a batch."""
    sets = ["last_seq = last_seq + %s", "updated_at = %s"]
    params: list[Any] = [events, now]
    if wakes:
        sets.append("wakeups = wakeups + %s")
        params.append(wakes)
    patch = patch or RunPatch()
    for column, value in patch.columns().items():
        sets.append(f"{column} = %s")
        params.append(json_param(column, value) if column in JSON_COLUMNS else value)
    where = ["id = %s"]
    where_params: list[Any] = [run_param]
    if isinstance(guard, LeaseGuard | SuspendGuard):
        where.append("lease_token = %s")
        where_params.append(guard.token)
        if isinstance(guard, SuspendGuard):
            where.append("wakeups = %s")
            where_params.append(guard.wakeups)
    elif isinstance(guard, UnfinishedGuard):
        where.append(f"status IN ({', '.join(['%s'] * len(ACTIVE_RUN_STATES))})")
        where_params.extend(str(s) for s in ACTIVE_RUN_STATES)
    if patch.release_lease:
        sets.extend(["lease_token = NULL", "lease_expires_at = NULL"])
    # The lease is extended by the heartbeat thread, not here: lease_expires_at is indexed, and
    # touching it would turn every checkpoint's cheap HOT update of the run row into a full one.
    table = Run._meta.db_table
    sql = f"UPDATE {table} SET {', '.join(sets)} WHERE {' AND '.join(where)} RETURNING last_seq"
    return sql, params + where_params
