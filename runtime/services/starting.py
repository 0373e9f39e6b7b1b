"""Starting runs: checked input, idempotency keys, concurrency limits and start policies."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from contextlib import suppress
from functools import partial
from typing import Any, cast

from django.db import IntegrityError

from runtime import conf
from runtime.core.clock import current_time
from runtime.core.errors import IdempotencyConflict, ReservedIdempotencyKey, RunAlreadyFinished
from runtime.core.identity import RESERVED_KEY_PREFIXES, check_idempotency_key, is_reserved_key
from runtime.core.jsonvalues import checked
from runtime.dispatch import enqueue_run, enqueue_run_soon
from runtime.flow.admission import admission_terms, admit
from runtime.models import Run
from runtime.registry import WorkflowFunction, registry
from runtime.services.cancelling import cancel_run
from runtime.store.runs.run_rows import (
    active_runs_of_key,
    insert_run,
    is_admitted,
    keyed_run,
    saved_run,
    slots_taken,
)

_RUN_ID = Run._meta.get_field("id")


def start_run(
    workflow: str | WorkflowFunction[Any],
    args: list[Any] | tuple[Any, ...] = (),
    kwargs: dict[str, Any] | None = None,
    *,
    idempotency_key: str | None = None,
    concurrency_key: str | None = None,
    priority: int = 0,
    owner: Any = None,
    runtime_key: str | None = None,
    send_soon: bool = False,
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
    (`dispatch.enqueue_run_soon`) instead of sent before this returns.
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
    )
    return (found if isinstance(found, Run) else saved_run(found)), created


def start_run_soon(
    workflow: str | WorkflowFunction[Any],
    args: list[Any] | tuple[Any, ...] = (),
    kwargs: dict[str, Any] | None = None,
    *,
    priority: int = 0,
) -> uuid.UUID:
    """`start_run(..., send_soon=True)` of a run without a key or an owner, for a caller that
    needs only its id (a Django task's enqueue): no model instance is built."""
    found, _ = _start(workflow, args, kwargs, priority=priority, send_soon=True)
    return found.id if isinstance(found, Run) else cast(uuid.UUID, found["id"])


def _start(
    workflow: str | WorkflowFunction[Any],
    args: list[Any] | tuple[Any, ...],
    kwargs: dict[str, Any] | None,
    *,
    idempotency_key: str | None = None,
    concurrency_key: str | None = None,
    priority: int = 0,
    owner: Any = None,
    runtime_key: str | None = None,
    send_soon: bool = False,
) -> tuple[Run | dict[str, Any], bool]:
    """`start_run`; a new run as its columns unless it had to be read back (on_limit skip)."""
    wf = registry.workflow(workflow)
    key, priority = admission_terms(wf.name, concurrency_key, priority)
    kwargs = kwargs or {}
    idem = _caller_key(idempotency_key) if runtime_key is None else runtime_key
    run_input, size = checked(
        {"args": list(args), "kwargs": kwargs},
        f"workflow {wf.name!r} input",
        conf.get().MAX_PAYLOAD_BYTES,
    )
    wf.check_arguments(run_input["args"], run_input["kwargs"])
    owner_id = owner if owner is None or isinstance(owner, int) else owner.pk
    if idem:
        existing = _keyed_run(owner_id, wf.name, idem, run_input)
        if existing is not None:
            return existing, False
    at_limit = key is not None and wf.flow.on_limit != "queue" and _at_limit(wf, key)
    if at_limit and wf.flow.on_limit == "cancel_running":
        _cancel_key(wf, key or "", owner_id)
    try:
        run = _create_run(wf.name, run_input, idem, key, priority, owner_id, size, send_soon)
    except IntegrityError:
        if idem:
            existing = _keyed_run(owner_id, wf.name, idem, run_input)
            if existing is not None:
                return existing, False
        raise
    if at_limit and wf.flow.on_limit == "skip":
        return _skip_unless_admitted(saved_run(run)), True
    return run, True


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


def _at_limit(wf: WorkflowFunction[Any], key: str) -> bool:
    return slots_taken(wf.name, key) >= (wf.flow.concurrency or 0)


def _cancel_key(wf: WorkflowFunction[Any], key: str, owner_id: int | None) -> None:
    """`on_limit="cancel_running"`: cancel the key's runs (running, and queued behind them)
    that this start's owner owns; another user's runs keep their slots (the start queues)."""
    for run_id in active_runs_of_key(wf.name, key, owner_id):
        with suppress(RunAlreadyFinished):  # finished meanwhile: its slot is free anyway
            cancel_run(run_id, reason="replaced: a newer start took its place")


def _skip_unless_admitted(run: Run) -> Run:
    """`on_limit="skip"`: the start's admission (after its commit) found no free slot."""
    if not is_admitted(run.id):
        with suppress(RunAlreadyFinished):
            cancel_run(run.id, reason="skipped")
        run.refresh_from_db()
    return run


def _create_run(
    workflow: str,
    run_input: Any,
    idempotency_key: str | None,
    concurrency_key: str | None = None,
    priority: int = 0,
    owner_id: int | None = None,
    size: int | None = None,
    send_soon: bool = False,
) -> dict[str, Any]:
    """Insert the run and its run_created event; enqueue it (or admit it) after commit; the
    run's columns.

    The input and the event's payload are written in their stored forms (encrypted, or in the
    payload storage when large: runtime.store.history.payload_forms); `size` is the input's JSON
    bytes.
    """
    now = current_time()
    gated = concurrency_key is not None  # waits for a slot: not due until admitted
    run = {
        "id": _RUN_ID.get_default(),  # the model's default, as a Run() would take it
        "workflow": workflow,
        "input": run_input,
        "idempotency_key": idempotency_key,
        "created_at": now,
        "updated_at": now,
        "wake_at": None if gated else now,
        "last_seq": 1,
        "priority": priority,
        "concurrency_key": concurrency_key,
        "admitted": not gated,
        "owner_id": owner_id,
    }
    payload = {"workflow": workflow, "input": run_input, "idempotency_key": idempotency_key}
    if gated or priority:
        payload.update(concurrency_key=concurrency_key, priority=priority)
    if owner_id is not None:  # the log names the owner too: it is the source of truth
        payload["owner"] = owner_id
    bound = None if size is None else size + 1024
    if gated:
        then: Callable[[], object] = partial(admit, workflow, concurrency_key or "")
    else:
        send = enqueue_run_soon if send_soon else enqueue_run
        then = partial(send, run["id"], priority=priority)
    insert_run(run, payload, now, bound=bound, then=then)
    return run
