"""Search attribute rows (runtime.models.search): written at a start, by `ctx.set_search` and
by a fork; read for a run's page; and the filter a list query adds for each condition."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import Q, QuerySet

from runtime.core.search import Condition
from runtime.models import Event, Run, SearchAttribute
from runtime.store.dialect import postgres
from runtime.store.runs.search_pending import (
    column_of,
    drain_matching,
    drain_runs,
    pending_text_values,
    pending_value_matches,
    rows_with_pending,
)

_TABLE = SearchAttribute._meta.db_table
# text_values: from the smallest value, each next one is the least greater than the last.
TEXT_VALUES_SQL = (
    "WITH RECURSIVE found(text) AS ("
    f" SELECT MIN(text) FROM {_TABLE} WHERE name = %s AND text IS NOT NULL"
    " UNION ALL"
    f" SELECT (SELECT MIN(s.text) FROM {_TABLE} s WHERE s.name = %s"
    " AND s.text IS NOT NULL AND s.text > found.text)"
    " FROM found WHERE found.text IS NOT NULL"
    ") SELECT text FROM found WHERE text IS NOT NULL LIMIT %s"
)


def _typed(kind: str, value: Any) -> dict[str, Any]:
    """The typed column that holds a value of `kind` (in its JSON form)."""
    if kind == "str":
        return {"num": None, "text": value, "at": None}
    if kind == "datetime":
        return {"num": None, "text": None, "at": datetime.fromisoformat(value)}
    return {"num": float(value), "text": None, "at": None}


def attribute_rows(
    run_id: uuid.UUID, kinds: Mapping[str, str], values: Mapping[str, Any], position: int = 0
) -> list[dict[str, Any]]:
    """The rows (column values) of a run's attributes `values`, of the declared `kinds`."""
    return [
        {
            "run_id": run_id,
            "name": name,
            "kind": kinds[name],
            "position": position,
            **_typed(kinds[name], value),
        }
        for name, value in values.items()
    ]


def insert_rows(rows: list[dict[str, Any]]) -> None:
    """Insert these attribute rows (inside the caller's transaction)."""
    if rows:
        SearchAttribute.objects.bulk_create([SearchAttribute(**row) for row in rows])


def set_attributes(rows: list[dict[str, Any]]) -> None:
    """Set these attribute rows of one run, each unless a later position set the attribute
    (a replay of an older `ctx.set_search` never overwrites a newer value). The run's pending
    start values are drained first: a query must not find it by a value it no longer has."""
    drain_runs({row["run_id"] for row in rows})
    with transaction.atomic():
        for row in rows:
            fields = {k: row[k] for k in ("kind", "num", "text", "at", "position")}
            mine = SearchAttribute.objects.filter(run_id=row["run_id"], name=row["name"])
            if mine.filter(position__lte=row["position"]).update(**fields) or mine.exists():
                continue
            try:
                with transaction.atomic():
                    SearchAttribute.objects.create(**row)
            except IntegrityError:  # set meanwhile by a newer execution: it holds the lease
                continue


def attributes_of(run_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, dict[str, Any]]:
    """The attributes of these runs, {run id: {name: value}} (runs without any left out)."""
    ids = list(run_ids)
    found: dict[uuid.UUID, dict[str, Any]] = {}
    if postgres():  # with the pending ones, oldest position first: a later one wins
        rows = rows_with_pending(ids)
    else:
        rows = list(SearchAttribute.objects.filter(run_id__in=ids))
    for row in rows:
        found.setdefault(row.run_id, {})[row.name] = row.value
    return {run_id: dict(sorted(values.items())) for run_id, values in found.items()}


def text_values(name: str, limit: int) -> list[str]:
    """The first `limit` distinct values of the str attribute `name`, in order: a loose scan
    of its (name, text) index, one probe per value, however many runs share each value."""
    with connection.cursor() as cursor:
        cursor.execute(TEXT_VALUES_SQL, [name, name, limit])
        indexed = [row[0] for row in cursor.fetchall()]
    pending = pending_text_values(name, limit)
    return sorted(set(indexed) | set(pending))[:limit] if pending else indexed


def value_matching(term: str, number: float | None) -> QuerySet[Any]:
    """The run ids with an attribute whose value is `term` (a str) or `number` (the admin
    search box's bare terms), the pending runs that have one drained first (as `matching`)."""
    pending = pending_value_matches(term, number)
    if pending is not None:
        drain_runs(pending.values_list("run_id", flat=True))
    rows = SearchAttribute.objects.filter(text=term)
    if number is not None:
        rows = SearchAttribute.objects.filter(Q(text=term) | Q(num=number))
    return rows.values("run_id")


def start_values(run: Run) -> dict[str, Any]:
    """The attributes `run` was started with (its run_created event's `search`)."""
    created = Event.objects.filter(run_id=run.id, seq=1).only("payload").first()
    payload = created.payload if created is not None else None
    search = payload.get("search") if isinstance(payload, dict) else None
    return dict(search) if isinstance(search, dict) else {}


def run_workflow(run_id: uuid.UUID) -> str | None:
    """The workflow name of a run, or None."""
    return Run.objects.filter(id=run_id).values_list("workflow", flat=True).first()


def _lookup(cond: Condition) -> dict[str, Any]:
    column = column_of(cond.kind)

    def stored(value: Any) -> Any:
        return _typed(cond.kind, value)[column]

    if cond.op == "in":
        return {f"{column}__in": [stored(v) for v in cond.value]}
    if cond.op == "contains":
        return {f"{column}__contains": cond.value}
    op = {"eq": "", "gte": "__gte", "lte": "__lte"}[cond.op]
    return {f"{column}{op}": stored(cond.value)}


def matching(runs: QuerySet[Run], conditions: list[Condition]) -> QuerySet[Run]:
    """`runs` narrowed to those whose attributes meet every condition: per attribute one
    semi-join on its (name, value) index, its conditions together (a range is one index
    range, estimated as one: docs/design/search.md). On PostgreSQL the pending rows that
    meet them are drained first (runtime.store.runs.search_pending), so a run is found from
    the moment its start commits."""
    by_name: dict[str, list[Condition]] = {}
    for cond in conditions:
        by_name.setdefault(cond.name, []).append(cond)
    for name, terms in by_name.items():
        lookups = [_lookup(cond) for cond in terms]
        drain_matching(name, column_of(terms[0].kind), lookups)
        rows = SearchAttribute.objects.filter(name=name)
        for lookup in lookups:
            rows = rows.filter(**lookup)
        runs = runs.filter(id__in=rows.values("run_id"))
    return runs
