"""The rows a checkpoint batch adds to a run's history, one statement form each, any database.

A run's part of a batch (runtime.store.history.parts) writes, after its run's guarded UPDATE
(runtime.store.runs.run_statements): its step rows as upserts, its events with seqs counted back
from the run's new `last_seq`, and its new fan-out groups. On PostgreSQL the one-round-trip path
(runtime.store.history.pg_statements) puts these very statements in one statement as CTEs after the
UPDATE; the transaction path (runtime.store.history.history_txn) runs them after it, on any
database. Casts and parameter forms come from runtime.store.dialect; statement texts depend
only on the number of rows, so each shape is built (and on PostgreSQL prepared) once.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from functools import cache
from operator import attrgetter
from typing import Any

from runtime.core.writes import EventDraft, FanoutGroupRow, StepRow
from runtime.models import Event, FanoutGroup, Step
from runtime.store.dialect import Statement, adapter, cast, chunks, postgres, same
from runtime.store.history.columns import step_columns

EVENT_COLUMNS = ("back", "type", "step_id", "payload", "created_at")
_EVENT_TYPES = ("integer", "text", "uuid", "jsonb", "timestamptz")


def step_width() -> int:
    """The parameters one step row binds."""
    return len(step_columns())


def steps_insert(rows_sql: str, update_fields: Sequence[str]) -> str:
    """The step upsert of the rows `rows_sql` gives (a VALUES list, or a SELECT)."""
    columns = ", ".join(c.name for c in step_columns())
    updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in update_fields)
    return (
        f"INSERT INTO {Step._meta.db_table} ({columns}) {rows_sql} "
        f"ON CONFLICT (run_id, position) DO UPDATE SET {updates}"
    )


def events_insert(rows_sql: str) -> str:
    """The event insert of the rows `rows_sql` selects (run_id, seq, type, step_id, payload,
    created_at)."""
    table = Event._meta.db_table
    return f"INSERT INTO {table} (run_id, seq, type, step_id, payload, created_at) {rows_sql}"


@cache
def _steps_sql(rows: int, update_fields: tuple[str, ...], pg: bool) -> str:
    row = "(" + ", ".join(cast("%s", c.sql_type) for c in step_columns()) + ")"
    return steps_insert(f"VALUES {', '.join([row] * rows)}", update_fields)


@cache
def _step_params(pg: bool) -> tuple[Callable[[StepRow], tuple[Any, ...]], int, tuple[Any, ...]]:
    """How a step row becomes its parameters here: the getter of its attributes in column
    order, where the run id goes among them, and the (index, form) of each column whose
    parameter is not the value as it is."""
    columns = step_columns()
    getter = attrgetter(*(c.attname for c in columns if c.attname is not None))
    run_index = next(i for i, c in enumerate(columns) if c.attname is None)
    forms = tuple(  # the run id's parameter is made once a statement, by the caller
        (i, form)
        for i, c in enumerate(columns)
        if c.attname is not None and (form := adapter(c.param)) is not same
    )
    return getter, run_index, forms


def steps_statement(
    run_id: uuid.UUID, rows: Sequence[StepRow], update_fields: Sequence[str]
) -> Statement:
    """Upsert step rows of run `run_id`: a row written before is updated in `update_fields`."""
    pg = postgres()
    run_param = adapter("uuid")(run_id)
    getter, run_index, forms = _step_params(pg)
    params: list[Any] = []
    for row in rows:
        values = list(getter(row))
        values.insert(run_index, run_param)
        for i, form in forms:
            values[i] = form(values[i])
        params += values
    return _steps_sql(len(rows), tuple(update_fields), pg), params


def steps_statements(
    run_id: uuid.UUID, rows: Sequence[StepRow], update_fields: Sequence[str]
) -> list[Statement]:
    """`steps_statement` in as many statements as the parameter limit asks."""
    return [steps_statement(run_id, part, update_fields) for part in chunks(rows, step_width())]


@cache
def _events_sql(rows: int, last_seq: str, source: str, pg: bool) -> tuple[str, str]:
    row = "(" + ", ".join(cast("%s", t) for t in _EVENT_TYPES) + ")"
    values = f"v({', '.join(EVENT_COLUMNS)}) AS (VALUES {', '.join([row] * rows)})"
    insert = events_insert(
        f"SELECT {cast('%s', 'uuid')}, {last_seq} - v.back, v.type, v.step_id, v.payload, "
        f"v.created_at FROM {source}"
    )
    return values, insert


@cache
def _event_forms(pg: bool) -> tuple[tuple[int, Callable[[Any], Any]], ...]:
    """(index, form) of each event parameter whose form is not the value as it is."""
    forms = zip((2, 3, 4), (adapter("uuid"), adapter("json"), adapter("time")), strict=True)
    return tuple((i, form) for i, form in forms if form is not same)


def event_values(drafts: Sequence[EventDraft]) -> list[Any]:
    """The parameters of the events' VALUES list; the last event is `back` 0 from last_seq."""
    forms = _event_forms(postgres())
    n = len(drafts)
    params: list[Any] = []
    for i, draft in enumerate(drafts):
        row = [n - 1 - i, str(draft.type), draft.step_id, draft.payload, draft.at]
        for j, form in forms:
            row[j] = form(row[j])
        params += row
    return params


def events_ctes(
    run_id: uuid.UUID, drafts: Sequence[EventDraft]
) -> tuple[tuple[str, str], list[Any]]:
    """The events as two CTEs (`v`, the values; `e`, the insert) of a statement whose CTE `u`
    is the run's UPDATE returning its new `last_seq`."""
    return _events_ctes_sql(len(drafts), postgres()), [
        *event_values(drafts),
        adapter("uuid")(run_id),
    ]


@cache
def _events_ctes_sql(rows: int, pg: bool) -> tuple[str, str]:
    values, insert = _events_sql(rows, "u.last_seq", "u, v", pg)
    return values, f"e AS ({insert})"


def events_statements(
    run_id: uuid.UUID, drafts: Sequence[EventDraft], last_seq: int
) -> list[Statement]:
    """Insert the events of run `run_id`, the last of them at seq `last_seq`, in as many
    statements as the parameter limit asks."""
    statements: list[Statement] = []
    written = 0
    for part in chunks(drafts, len(EVENT_COLUMNS)):
        written += len(part)
        part_last = last_seq - (len(drafts) - written)  # the seq of this chunk's last event
        values, insert = _events_sql(len(part), cast("%s", "integer"), "v", postgres())
        params = [*event_values(part), adapter("uuid")(run_id), part_last]
        statements.append((f"WITH {values} {insert}", params))
    return statements


@cache
def _groups_sql(rows: int, pg: bool) -> str:
    types = ("uuid", "uuid", "integer", "integer", "integer", "integer", "integer", "integer",
             "integer", "timestamptz", "timestamptz")  # fmt: skip
    row = "(" + ", ".join(cast("%s", t) for t in types) + ")"
    return (
        f"INSERT INTO {FanoutGroup._meta.db_table} (id, run_id, first_position, total, "
        "released, succeeded, failed, need, failure_limit, created_at, check_at) "
        f"VALUES {', '.join([row] * rows)} ON CONFLICT (run_id, first_position) DO NOTHING"
    )


def fanout_groups_statement(
    run_id: uuid.UUID, groups: Sequence[FanoutGroupRow], check_at: datetime
) -> Statement:
    """Insert a run's new fan-out groups; a replayed insert of the same group does nothing."""
    as_uuid, as_time = adapter("uuid"), adapter("time")
    run_param, check_param = as_uuid(run_id), as_time(check_at)
    params: list[Any] = []
    for f in groups:
        params.extend(
            (as_uuid(f.id), run_param, f.first_position, f.total, f.released, 0, 0, f.need,
             f.failure_limit, as_time(f.created_at), check_param)
        )  # fmt: skip
    return _groups_sql(len(groups), postgres()), params
