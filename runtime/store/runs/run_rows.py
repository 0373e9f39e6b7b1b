"""Run rows as the services read and write them: a new run with its run_created event, runs
found by key or by concurrency slot, and the step a callback token names."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

import psycopg
from django.db import IntegrityError, connection, models
from django.db.models.sql import InsertQuery

from runtime.core.clock import current_time
from runtime.models import ACTIVE_RUN_STATES, Event, EventType, Run, Step
from runtime.store.connection import raw_connection
from runtime.store.dialect import postgres
from runtime.store.history.payload_forms import StoredForms
from runtime.store.raw_statements import kept_cursor
from runtime.store.runs.search_pending import insert_statement as pending_statement
from runtime.store.runs.search_rows import attribute_rows, insert_rows

_RUN_ID = Run._meta.get_field("id")


@dataclass(frozen=True, slots=True)
class NewRun:
    """A run as its start inserted it (Run field names): what the start knows without reading
    it back; `as_model()` is the row as `save()` would leave a new Run."""

    id: uuid.UUID
    workflow: str
    input: Any
    idempotency_key: str | None
    created_at: datetime
    wake_at: datetime | None
    priority: int
    concurrency_key: str | None
    admitted: bool
    owner_id: int | None
    app_version: str

    def columns(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _NEW_RUN_FIELDS}

    def as_model(self) -> Run:
        run = Run(**self.columns(), updated_at=self.created_at, last_seq=1)
        run._state.adding, run._state.db = False, connection.alias
        return run


_NEW_RUN_FIELDS = tuple(f.name for f in fields(NewRun))


def insert_run_txn(
    workflow: str,
    run_input: Any,
    payload: dict[str, Any],
    *,
    idempotency_key: str | None,
    concurrency_key: str | None,
    priority: int,
    owner_id: int | None,
    bound: int | None,
    app_version: str = "",
    search: tuple[dict[str, str], dict[str, Any]] | None = None,
) -> NewRun:
    """Insert a run and its run_created event (with `payload`) in the caller's transaction; the
    new row. A run with a `concurrency_key` waits unadmitted (not due) for a slot.

    Both go in their stored forms (encrypted, or in the payload storage when large:
    runtime.store.history.payload_forms), `bound` their JSON size's bound. On PostgreSQL they
    are one statement, their values bound without a model instance built: one round trip for
    a start (a Django task's enqueue), which is a transaction of its own outside an atomic
    block. A repeated idempotency key raises Django's IntegrityError. `app_version` is the
    deployment version the run is pinned to (runtime.versions). `search` is the workflow's
    declared attribute kinds and the run's checked values (runtime.store.runs.search_rows),
    inserted with it (on PostgreSQL in the same statement, as a pending row).
    """
    now = current_time()
    gated = concurrency_key is not None
    new = NewRun(
        id=_RUN_ID.get_default(),  # the model's default, as a Run() would take it
        workflow=workflow,
        input=run_input,
        idempotency_key=idempotency_key,
        created_at=now,
        wake_at=None if gated else now,
        priority=priority,
        concurrency_key=concurrency_key,
        admitted=not gated,
        owner_id=owner_id,
        app_version=app_version,
    )
    run, created = _stored_rows(new, payload, bound)
    attributes = attribute_rows(new.id, *search) if search else []
    if postgres():
        _insert_together(run, created, attributes)
    else:
        Run(**run).save(force_insert=True)
        Event(**created).save(force_insert=True)
        insert_rows(attributes)
    return new


def _stored_rows(
    new: NewRun, payload: dict[str, Any], bound: int | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The run's and its run_created event's column values, payloads in their stored forms."""
    forms = StoredForms()
    run = {
        **new.columns(),
        "input": forms.form(new.input, new.id, bound),
        "updated_at": new.created_at,
        "last_seq": 1,
    }
    created = {
        "run_id": new.id,
        "seq": 1,
        "type": EventType.RUN_CREATED,
        "payload": forms.form(payload, new.id, bound),
        "created_at": new.created_at,
    }
    return run, created


def inserts_in_one_statement() -> bool:
    """Whether `insert_run_txn` is one statement (PostgreSQL): a transaction of its own."""
    return postgres()


def _insert_together(
    run: dict[str, Any], event: dict[str, Any], attributes: list[dict[str, Any]]
) -> None:
    """The run's, its event's and its search attributes' INSERTs as one prepared statement
    (the event's foreign key is checked at its end, when the run's row is there), its values
    bound by the server. The attributes go in as one pending row, indexed later by the
    workers' drain (runtime.store.runs.search_pending)."""
    run_sql, params = _insert_statement(Run, run)
    event_sql, event_params = _insert_statement(Event, event)
    attr_sql = None
    if attributes:
        attr_sql, attr_params = pending_statement(attributes)
        params += attr_params
    try:
        # The thread's kept cursor and a text converted once (runtime.store.raw_statements):
        # psycopg neither parses it nor looks the parameters' dumpers up on every start.
        cursor = kept_cursor(raw_connection())
        sql = _together_sql(run_sql, attr_sql, event_sql)
        cursor.execute(sql, [*params, *event_params], prepare=True)
    except psycopg.IntegrityError as exc:  # as Django's cursor would raise it
        raise IntegrityError(*exc.args) from exc


@functools.cache
def _together_sql(run_sql: str, attr_sql: str | None, event_sql: str) -> str:
    attributes = "" if attr_sql is None else f", new_attributes AS ({attr_sql}) "
    return f"WITH new_run AS ({run_sql}) {attributes}{event_sql}"


def _insert_statement(model: type[Run | Event], values: dict[str, Any]) -> tuple[str, list[Any]]:
    """The INSERT Django's `save(force_insert=True)` would send for a `model` row of these
    field values (by attname; the others their defaults), with its params.

    A one-row INSERT of plain values has the same SQL every time: it is compiled once per
    model and connection vendor, and only the values are prepared (as the compiler does; a
    field whose value PostgreSQL's driver takes as it is gets no preparing call). The fields
    are plain (no `pre_save` of their own, no expression values): a value is the row's.
    """
    known = _INSERTS.get((model, connection.vendor))
    if known is None:
        meta = model._meta
        fields = [f for f in meta.local_concrete_fields if f is not meta.auto_field]
        query = InsertQuery(model)
        query.insert_values(fields, [model(**values)])
        ((sql, _),) = query.get_compiler(connection=connection).as_sql()
        plan = tuple((f.attname, type(f) in _TAKEN_AS_THEY_ARE, _default_of(f), f) for f in fields)
        known = _INSERTS[(model, connection.vendor)] = (sql, plan)
    sql, plan = known
    params = []
    for attname, plain, default, field in plan:
        value = values[attname] if attname in values else default(field)
        prepared = plain or value is None
        params.append(value if prepared else field.get_db_prep_save(value, connection))
    return sql, params


def _default_of(field: Any) -> Callable[[Any], Any]:
    """How a missing field's value is made: a constant default is made once."""
    if field.has_default() and callable(field.default):
        return lambda f: f.get_default()
    constant = field.get_default()
    return lambda _: constant


# Fields whose Python values psycopg binds as they are, as their get_db_prep_save would leave
# them on PostgreSQL (a str, an int, a bool, an aware datetime, a UUID).
_TAKEN_AS_THEY_ARE = frozenset(
    {
        models.CharField,
        models.PositiveIntegerField,
        models.PositiveSmallIntegerField,
        models.BigIntegerField,
        models.IntegerField,
        models.BooleanField,
        models.DateTimeField,
        models.UUIDField,
    }
)
_INSERTS: dict[tuple[type[Any], str], tuple[str, tuple[tuple[str, bool, Any, Any], ...]]] = {}


def run_by_id(run_id: uuid.UUID) -> Run | None:
    """The run's row, or None."""
    return Run.objects.filter(id=run_id).first()


def keyed_run(owner_id: int | None, workflow: str, key: str) -> Run | None:
    """The run this owner started of this workflow with this idempotency key, or None."""
    return Run.objects.filter(owner_id=owner_id, workflow=workflow, idempotency_key=key).first()


def slots_taken(workflow: str, concurrency_key: str) -> int:
    """How many active runs of the workflow hold a slot of this concurrency key."""
    in_use = Run.objects.active().filter(
        workflow=workflow, concurrency_key=concurrency_key, admitted=True
    )
    return in_use.count()


def active_runs_of_key(
    workflow: str, concurrency_key: str, owner_id: int | None
) -> list[uuid.UUID]:
    """The ids of the owner's active runs of this workflow and concurrency key, oldest first."""
    active = Run.objects.active().filter(
        workflow=workflow, concurrency_key=concurrency_key, owner_id=owner_id
    )
    return list(active.order_by("created_at").values_list("id", flat=True))


def is_admitted(run_id: uuid.UUID) -> bool:
    """Whether the run has been admitted into a concurrency slot."""
    return Run.objects.filter(id=run_id, admitted=True).exists()


def active_runs_keyed_under(owner_id: int | None, key_prefix: str) -> list[uuid.UUID]:
    """The ids of the owner's active runs whose idempotency key starts with `key_prefix`."""
    children = Run.objects.active().filter(
        owner_id=owner_id, idempotency_key__startswith=key_prefix
    )
    return list(children.values_list("id", flat=True))


def callback_step(token_digest: str, run_id: uuid.UUID | None) -> Step | None:
    """The callback step of run `run_id` whose token has this digest, with its run, or None.
    Without the run (a token made before tokens named their run) the digest is looked up in
    every week's partition of the history: a probe of each one's unique index."""
    steps = Step.objects.select_related("run").filter(callback_token=token_digest)
    return (steps if run_id is None else steps.filter(run_id=run_id)).first()


def finished_among(run_ids: list[uuid.UUID]) -> list[uuid.UUID]:
    """Those of these runs that still exist and are no longer active."""
    rows = Run.objects.filter(id__in=run_ids).exclude(status__in=ACTIVE_RUN_STATES)
    return list(rows.values_list("id", flat=True))
