"""The pending list of search attributes (PostgreSQL): a start's attributes as one row, moved
into the indexed attribute rows by the workers' drain, or by whoever needs them there first.

A start inserts one `runtime_searchpending` row (its run id, its attributes as JSON) in the
statement that inserts the run, rather than a row per attribute with an entry in the typed
B-trees: the start's cost was those index entries (docs/design/search.md, "The pending
list"). The drain moves a batch in one statement; a run's attributes are drained at once
where they must be consistent (before `ctx.set_search` writes), and a list query drains the
pending rows it matches before it reads the attribute rows (`drain_matching`), so a run is
found by its attributes as soon as its start commits. A run's page reads its pending values
as they are. SQLite writes the attribute rows at the start and has nothing pending: every
function here is a no-op or empty there.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import BooleanField, DateTimeField, FloatField, QuerySet
from django.db.models.expressions import RawSQL
from django.db.models.fields.json import KT
from django.db.models.functions import Cast

from runtime.models import SearchAttribute, SearchPending
from runtime.store.dialect import postgres

_PENDING = SearchPending._meta.db_table
_ATTRIBUTES = SearchAttribute._meta.db_table
_INSERT = f"INSERT INTO {_PENDING} (run_id, attributes) VALUES (%s::uuid, %s::jsonb)"
# A pending attribute `a` (of jsonb_each) as the typed columns of its attribute row.
_AS_COLUMNS = (
    "a.key, a.value ->> 'kind', (a.value ->> 'num')::float8, a.value ->> 'text',"
    " (a.value ->> 'at')::timestamptz"
)

# From the pending rows `moved` (deleted, returned), the attribute rows of position 0; a row
# there already came from a later position (a `ctx.set_search`, a fork's copy): it stays.
_INDEX_MOVED = (
    f"indexed AS (INSERT INTO {_ATTRIBUTES} (run_id, name, kind, num, text, at, position)"
    f" SELECT m.run_id, {_AS_COLUMNS}, 0"
    " FROM moved m CROSS JOIN LATERAL jsonb_each(m.attributes) a"
    " ON CONFLICT (run_id, name) DO NOTHING RETURNING 1)"
    " SELECT (SELECT count(*) FROM moved), (SELECT count(*) FROM indexed)"
)
# A batch, oldest runs first (time-ordered ids), skipping rows another drain holds.
DRAIN_SQL = (
    f"WITH moved AS (DELETE FROM {_PENDING} WHERE run_id IN (SELECT run_id FROM {_PENDING}"
    " ORDER BY run_id LIMIT %s FOR UPDATE SKIP LOCKED) RETURNING run_id, attributes), "
    + _INDEX_MOVED
)
# These runs' rows, waiting for a drain that holds one (its rows are then committed); locked
# in key order, so two callers draining overlapping runs wait for each other, never deadlock.
_DRAIN_RUNS_SQL = (
    f"WITH moved AS (DELETE FROM {_PENDING} WHERE run_id IN (SELECT run_id FROM {_PENDING}"
    " WHERE run_id = ANY(%s) ORDER BY run_id FOR UPDATE) RETURNING run_id, attributes), "
    + _INDEX_MOVED
)
DRAIN_BATCH = 1000
DRAIN_SECONDS = 2.0  # per housekeeping sweep


@dataclass(frozen=True, slots=True)
class Drained:
    """What a drain moved: pending rows (runs) and the attribute rows it inserted."""

    runs: int = 0
    attributes: int = 0

    def __add__(self, other: Drained) -> Drained:
        return Drained(self.runs + other.runs, self.attributes + other.attributes)


def column_of(kind: str) -> str:
    """The typed column (of an attribute row, and of a pending attribute) that holds a value
    of the declared `kind`."""
    return {"str": "text", "datetime": "at"}.get(kind, "num")


def pending_form(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """A run's attribute rows (runtime.store.runs.search_rows.attribute_rows) as its pending
    row's JSON: each attribute's kind and its one typed column's value."""
    form: dict[str, dict[str, Any]] = {}
    for row in rows:
        column = column_of(row["kind"])
        value = row[column]
        form[row["name"]] = {"kind": row["kind"], column: value.isoformat() if column == "at"
                             else value}  # fmt: skip
    return form


def insert_statement(rows: list[dict[str, Any]]) -> tuple[str, list[Any]]:
    """The INSERT of the pending row of these attribute rows of one run at its start, with
    its params: one SQL text whatever their number (runtime.store.runs.run_rows puts it in
    the statement that inserts the run)."""
    ((run_id,),) = {(row["run_id"],) for row in rows}
    return _INSERT, [run_id, json.dumps(pending_form(rows), separators=(",", ":"))]


def drain(limit: int = DRAIN_BATCH) -> Drained:
    """Move up to `limit` pending rows into attribute rows, in one statement (a transaction
    of its own unless the caller holds one); rows another drain holds are left to it."""
    return _drained(DRAIN_SQL, [limit]) if postgres() else Drained()


def drain_all(limit: int = DRAIN_BATCH, seconds: float = DRAIN_SECONDS) -> Drained:
    """Drain batch after batch until one comes back short (the workers' housekeeping), or
    for `seconds` at most: a backlog (workers that were down) is taken over several sweeps
    rather than holding up the loop's schedule ticks."""
    total = Drained()
    ends = time.monotonic() + seconds
    while True:
        batch = drain(limit)
        total += batch
        if batch.runs < limit or time.monotonic() >= ends:
            return total


def drain_runs(run_ids: Iterable[uuid.UUID]) -> Drained:
    """Move these runs' pending rows now (waiting for a drain that holds one): afterwards
    their attribute rows are all they have."""
    ids = list(run_ids)
    return _drained(_DRAIN_RUNS_SQL, [ids]) if ids and postgres() else Drained()


def _drained(sql: str, params: list[Any]) -> Drained:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        runs, attributes = cursor.fetchone()
    return Drained(runs, attributes)


def pending_count() -> int:
    """How many runs have attributes waiting for the drain."""
    return SearchPending.objects.count() if postgres() else 0


# A run's attribute rows with its pending ones as rows (id 0, position 0), by position: a row
# of a later position (a `ctx.set_search`) comes after, and wins.
_ROWS_WITH_PENDING = (
    f"SELECT id, run_id, name, kind, num, text, at, position FROM {_ATTRIBUTES}"
    " WHERE run_id = ANY(%s::uuid[]) UNION ALL"
    f" SELECT 0, p.run_id, {_AS_COLUMNS}, 0"
    f" FROM {_PENDING} p CROSS JOIN LATERAL jsonb_each(p.attributes) a"
    " WHERE p.run_id = ANY(%s::uuid[]) ORDER BY position"
)


def rows_with_pending(run_ids: list[uuid.UUID]) -> list[SearchAttribute]:
    """These runs' attribute rows and their pending attributes as rows (unsaved: id 0), in
    one query where the router sends the model's reads (a replica in `lagging_reads`)."""
    keys = [run_id.hex for run_id in run_ids]
    return list(SearchAttribute.objects.raw(_ROWS_WITH_PENDING, [keys, keys]))


def _typed_value(name: str, column: str) -> Any:
    """The SQL value of the pending attribute `name` in its typed column's type (NULL when
    the run has no such attribute, or it is of another type)."""
    text = KT(f"attributes__{name}__{column}")
    if column == "num":
        return Cast(text, FloatField())
    if column == "at":
        return Cast(text, DateTimeField())
    return text


def pending_matching(name: str, column: str, lookups: list[dict[str, Any]]) -> QuerySet[Any]:
    """The run ids of pending rows whose attribute `name` meets every lookup (on `column`:
    num, text or at, as the attribute rows' lookups name it): a scan of the pending table."""
    rows = SearchPending.objects.annotate(**{column: _typed_value(name, column)})
    for lookup in lookups:
        rows = rows.filter(**lookup)
    return rows.values("run_id")


def drain_matching(name: str, column: str, lookups: list[dict[str, Any]]) -> Drained:
    """Drain the pending rows whose attribute `name` meets every lookup, so that a query of
    the attribute rows alone finds their runs (a list query's read-your-writes).

    The query does not read the pending rows itself: a `UNION ALL` of them in its semi-join
    kept PostgreSQL from probing a run's attribute by key while walking the runs newest first
    (no parameterized path into the union, and no statistics for its run ids), which a broad
    condition needs: `amount >= A` (half of 1,000,000 runs) took 5.9 s instead of 2 ms
    (docs/design/search.md)."""
    if not postgres():
        return Drained()
    return drain_runs(pending_matching(name, column, lookups).values_list("run_id", flat=True))


def pending_text_values(name: str, limit: int) -> list[str]:
    """The first `limit` distinct pending values of the str attribute `name`, in order."""
    if not postgres():
        return []
    rows = SearchPending.objects.annotate(text=_typed_value(name, "text"))
    found = rows.filter(text__isnull=False).order_by("text").values_list("text", flat=True)
    return list(found.distinct()[:limit])


def pending_value_matches(term: str, number: float | None) -> QuerySet[Any] | None:
    """The run ids of pending rows with an attribute whose value is `term` (a str) or `number`
    (None off PostgreSQL): the admin search box's bare terms."""
    if not postgres():
        return None
    path = "$.* ? (@.text == $t || @.num == $n)" if number is not None else "$.* ? (@.text == $t)"
    found = RawSQL(
        "jsonb_path_exists(attributes, %s::jsonpath, %s::jsonb)",
        [path, json.dumps({"t": term, "n": number})],
        output_field=BooleanField(),
    )
    return SearchPending.objects.filter(found).values("run_id")
