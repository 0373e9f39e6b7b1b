"""Starting runs: checked input, idempotency keys, concurrency limits and start policies.

The start owns its transaction and says when it needs one: on PostgreSQL the run and its
run_created event are one statement, a transaction of its own in autocommit (no BEGIN and
COMMIT round trips to pay for), or part of the caller's; a keyed start inside the caller's
transaction takes a savepoint, so that losing its key to a concurrent start leaves the caller's
transaction usable; elsewhere the two inserts share one. A start that loses its key tries once
more, and then finds the other start's run. The run's message goes once the insert commits
(`transaction.on_commit`).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext, suppress
from dataclasses import dataclass
from functools import partial
from typing import Any

from django.db import IntegrityError, transaction

from runtime import conf
from runtime.core.errors import IdempotencyConflict, ReservedIdempotencyKey, RunAlreadyFinished
from runtime.core.identity import RESERVED_KEY_PREFIXES, check_idempotency_key, is_reserved_key
from runtime.core.jsonvalues import checked
from runtime.core.search import checked_values
from runtime.dispatch import enqueue_run, enqueue_run_soon
from runtime.flow.admission import admission_terms, admit
from runtime.models import Run
from runtime.registry import WorkflowFunction, registry, versions
from runtime.services.cancelling import cancel_run
from runtime.store.runs.run_rows import (
    NewRun,
    active_runs_of_key,
    insert_run_txn,
    inserts_in_one_statement,
    is_admitted,
    keyed_run,
    slots_taken,
)
from runtime.versions import routing as version_routing


def start_run(
    workflow: str | WorkflowFunction[..., Any],
    args: list[Any] | tuple[Any, ...] = (),
    kwargs: dict[str, Any] | None = None,
    *,
    idempotency_key: str | None = None,
    concurrency_key: str | None = None,
    priority: int = 0,
    owner: Any = None,
    runtime_key: str | None = None,
    send_soon: bool = False,
    app_version: str | None = None,
    search: dict[str, Any] | None = None,
) -> tuple[Run, bool]:
    """Create a run and enqueue it; returns (run, created).

    `owner` (a user or a user's primary key) is recorded on the run. A repeated idempotency
    key of the same owner and workflow returns the existing run, whatever its state, or raises
    IdempotencyConflict if the arguments differ; a key in the runtime's own namespace raises
    ReservedIdempotencyKey (the runtime passes its keys as `runtime_key`). Unknown workflows,
    arguments that are not JSON, too large, or that do not fit the workflow raise before
    anything is recorded. A run of a workflow with `concurrency=N` waits `pending` until
    admitted (runtime.flow.admission), by `priority` (0-9, higher first), then FIFO. With
    `send_soon` the run's message is handed to a background publisher once the run commits
    (`dispatch.enqueue_run_soon`) instead of sent before this returns. The run is pinned
    to `app_version` (a child: its parent's), else to this process's (runtime.versions).
    `search` sets the run's search attributes (declared by the workflow; InvalidArguments if
    not, or of another type).
    """
    found, created = _start(
        workflow,
        args,
        kwargs,
        idempotency_key=idempotency_key,
        concurrency_key=concurrency_key,
        priority=priority,
        owner=owner,
        runtime_key=runtime_key,
        send_soon=send_soon,
        app_version=app_version,
        search=search,
    )
    return (found.as_model() if isinstance(found, NewRun) else found), created


def start_run_soon(
    workflow: str | WorkflowFunction[..., Any],
    args: list[Any] | tuple[Any, ...] = (),
    kwargs: dict[str, Any] | None = None,
    *,
    priority: int = 0,
    search: dict[str, Any] | None = None,
) -> uuid.UUID:
    """`start_run(..., send_soon=True)` of a run without a key or an owner, for a caller that
    needs only its id (a Django task's enqueue): no model instance is built."""
    found, _ = _start(workflow, args, kwargs, priority=priority, send_soon=True, search=search)
    return found.id


def _start(
    workflow: str | WorkflowFunction[..., Any],
    args: list[Any] | tuple[Any, ...],
    kwargs: dict[str, Any] | None,
    *,
    idempotency_key: str | None = None,
    concurrency_key: str | None = None,
    priority: int = 0,
    owner: Any = None,
    runtime_key: str | None = None,
    send_soon: bool = False,
    app_version: str | None = None,
    search: dict[str, Any] | None = None,
) -> tuple[Run | NewRun, bool]:
    """`start_run`: the run its key names (created False), else the new one as inserted."""
    wf = registry.workflow(workflow)
    key, priority = admission_terms(wf.name, concurrency_key, priority)
    idem = _caller_key(idempotency_key) if runtime_key is None else runtime_key
    run_input, size = checked(
        {"args": list(args), "kwargs": kwargs or {}},
        f"workflow {wf.name!r} input",
        conf.get().MAX_PAYLOAD_BYTES,
    )
    wf.check_arguments(run_input["args"], run_input["kwargs"])
    attributes = checked_values(wf.name, wf.search, search)
    owner_id = owner if owner is None or isinstance(owner, int) else owner.pk
    version = versions.current() if app_version is None else app_version
    searched = (wf.search, attributes) if attributes else None
    terms = _Terms(idem, key, priority, owner_id, send_soon, version, searched)
    start = partial(_start_txn, wf, run_input, size, terms)
    try:
        with _transaction(idem):
            found, at_limit = start()
    except IntegrityError:
        if idem is None:
            raise
        with _transaction(idem):  # a concurrent start took the key: its run is there now
            found, at_limit = start()
    if not isinstance(found, NewRun):
        return found, False
    if at_limit and wf.flow.on_limit == "cancel_running":
        # After the commit: a cancel writes through the checkpoint writer's own connection,
        # and its admissions must not wait on this start's transaction.
        _cancel_key(wf, key or "", owner_id, keep=found.id)
    if at_limit and wf.flow.on_limit == "skip":
        return _skip_unless_admitted(found.as_model()), True
    return found, True


def _transaction(idempotency_key: str | None) -> AbstractContextManager[Any]:
    nested = transaction.get_connection().in_atomic_block
    if inserts_in_one_statement() and (idempotency_key is None or not nested):
        return nullcontext()  # each statement commits alone, or with the caller's transaction
    return transaction.atomic()


@dataclass(frozen=True, slots=True)
class _Terms:
    """What a start was asked for beside the workflow and its input."""

    idem: str | None
    key: str | None
    priority: int
    owner_id: int | None
    send_soon: bool
    version: str
    search: tuple[dict[str, str], dict[str, Any]] | None  # declared kinds, checked values


def _start_txn(
    wf: WorkflowFunction[..., Any], run_input: Any, size: int, terms: _Terms
) -> tuple[Run | NewRun, bool]:
    """Inside the start's transaction: the run its key names, else the inserted one; and
    whether the concurrency key's slots were full before (a `skip` or
    `cancel_running` start then acts once it committed)."""
    idem, key, owner_id = terms.idem, terms.key, terms.owner_id
    if idem:
        existing = _keyed_run(owner_id, wf.name, idem, run_input)
        if existing is not None:
            return existing, False
    at_limit = key is not None and wf.flow.on_limit != "queue" and _at_limit(wf, key)
    new = _create_run(wf.name, run_input, size, terms)
    return new, at_limit


def _caller_key(key: str | None) -> str | None:
    if key is None:
        return None
    check_idempotency_key(key)
    if is_reserved_key(key):
        raise ReservedIdempotencyKey(
            f"idempotency keys starting with {' or '.join(RESERVED_KEY_PREFIXES)} are the "
            "runtime's own (child runs, schedule ticks): choose another key"
        )
    return key


def _keyed_run(owner_id: int | None, workflow: str, key: str, run_input: Any) -> Run | None:
    """The run this owner started of this workflow with this key; a conflict if the arguments
    differ (a key names one start, never a different one, never another owner's run)."""
    run = keyed_run(owner_id, workflow, key)
    if run is not None and run.input != run_input:
        raise IdempotencyConflict(
            f"idempotency key {key!r} already started run {run.id} of {workflow!r} "
            "with other arguments"
        )
    return run


def _at_limit(wf: WorkflowFunction[..., Any], key: str) -> bool:
    return slots_taken(wf.name, key) >= (wf.flow.concurrency or 0)


def _cancel_key(
    wf: WorkflowFunction[..., Any], key: str, owner_id: int | None, keep: uuid.UUID
) -> None:
    """`on_limit="cancel_running"`: cancel the key's runs (running, and queued behind them)
    that this start's owner owns but the new run `keep`; another user's runs keep their slots
    (the start queues)."""
    for run_id in active_runs_of_key(wf.name, key, owner_id):
        if run_id == keep:
            continue
        with suppress(RunAlreadyFinished):  # finished meanwhile: its slot is free anyway
            cancel_run(run_id, reason="replaced: a newer start took its place")


def _skip_unless_admitted(run: Run) -> Run:
    """`on_limit="skip"`: the start's admission (after its commit) found no free slot."""
    if not is_admitted(run.id):
        with suppress(RunAlreadyFinished):
            cancel_run(run.id, reason="skipped")
        run.refresh_from_db()
    return run


def _create_run(workflow: str, run_input: Any, size: int | None, terms: _Terms) -> NewRun:
    """Insert the run and its run_created event; enqueue it (or admit it) once that commits.
    `size` is the input's JSON bytes."""
    idempotency_key, concurrency_key = terms.idem, terms.key
    priority, owner_id = terms.priority, terms.owner_id
    payload: dict[str, Any] = {
        "workflow": workflow,
        "input": run_input,
        "idempotency_key": idempotency_key,
    }
    if concurrency_key is not None or priority:
        payload.update(concurrency_key=concurrency_key, priority=priority)
    if owner_id is not None:  # the log names the owner too: it is the source of truth
        payload["owner"] = owner_id
    if terms.search:  # replayed and forked from the log like the rest of the start
        payload["search"] = terms.search[1]
    run = insert_run_txn(
        workflow,
        run_input,
        payload,
        idempotency_key=idempotency_key,
        concurrency_key=concurrency_key,
        priority=priority,
        owner_id=owner_id,
        bound=None if size is None else size + 1024,
        app_version=terms.version,
        search=terms.search,
    )
    version_routing.remember(run.id, terms.version)
    then: Callable[[], object]
    if concurrency_key is not None:  # waits for a slot: not due until admitted
        then = partial(admit, workflow, concurrency_key)
    elif terms.send_soon:  # one of a stream of starts, perhaps: it may leave with the next
        then = partial(enqueue_run_soon, run.id, priority=priority, stream=True)
    else:
        then = partial(enqueue_run, run.id, priority=priority)
    transaction.on_commit(then)  # at once outside an atomic block: the insert committed
    return run
