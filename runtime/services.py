"""The runtime's services: start, look up and cancel runs, post to callbacks.

They own the transactions; Celery tasks, views and the admin call them.
"""

from __future__ import annotations

import re
import uuid
from contextlib import suppress
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from runtime import conf
from runtime.checkpoint.errors import CheckpointFailed
from runtime.core.callbacks import CallbackTerms
from runtime.core.clock import Clock, SystemClock
from runtime.core.errors import (
    CallbackAlreadyCompleted,
    CallbackNotFound,
    PayloadError,
    RunAlreadyFinished,
    RunNotFound,
    StepChanged,
)
from runtime.core.identity import check_idempotency_key, child_run_key_prefix
from runtime.core.jsonvalues import checked
from runtime.core.writes import (
    EventDraft,
    HistoryWrite,
    OpenStepGuard,
    RunPatch,
    UnfinishedGuard,
)
from runtime.dispatch import enqueue_run
from runtime.flow.admission import admission_terms, admit, run_finished
from runtime.models import FINISHED_RUN_STATES, Event, EventType, Run, RunStatus, Step, StepStatus
from runtime.observe import metrics
from runtime.registry import WorkflowFunction, registry
from runtime.store import write_now
from runtime.streaming.wakeups import announce


def start_run(
    workflow: str | WorkflowFunction[Any],
    args: list[Any] | tuple[Any, ...] = (),
    kwargs: dict[str, Any] | None = None,
    *,
    idempotency_key: str | None = None,
    concurrency_key: str | None = None,
    priority: int = 0,
) -> tuple[Run, bool]:
    """Create a run and enqueue it; returns (run, created).

    A repeated idempotency key returns the existing run, whatever its state. Unknown workflows,
    arguments that are not JSON, too large, or that do not fit the workflow raise before
    anything is recorded. A run of a workflow with `concurrency=N` waits `pending` until
    admitted (runtime.flow.admission), by `priority` (0-9, higher first), then FIFO.
    """
    wf = registry.workflow(workflow)
    key, priority = admission_terms(wf.name, concurrency_key, priority)
    kwargs = kwargs or {}
    if idempotency_key is not None:
        check_idempotency_key(idempotency_key)
    run_input, _ = checked(
        {"args": list(args), "kwargs": kwargs},
        f"workflow {wf.name!r} input",
        conf.get().MAX_PAYLOAD_BYTES,
    )
    wf.check_arguments(run_input["args"], run_input["kwargs"])
    if idempotency_key:
        existing = Run.objects.filter(idempotency_key=idempotency_key).first()
        if existing is not None:
            return existing, False
    at_limit = key is not None and wf.flow.on_limit != "queue" and _at_limit(wf, key)
    if at_limit and wf.flow.on_limit == "cancel_running":
        _cancel_key(wf, key or "")
    try:
        run = _create_run(wf.name, run_input, idempotency_key, key, priority)
    except IntegrityError:
        if idempotency_key:
            existing = Run.objects.filter(idempotency_key=idempotency_key).first()
            if existing is not None:
                return existing, False
        raise
    if at_limit and wf.flow.on_limit == "skip":
        _skip_unless_admitted(run)
    return run, True


def _at_limit(wf: WorkflowFunction[Any], key: str) -> bool:
    in_use = Run.objects.active().filter(workflow=wf.name, concurrency_key=key, admitted=True)
    return in_use.count() >= (wf.flow.concurrency or 0)


def _cancel_key(wf: WorkflowFunction[Any], key: str) -> None:
    """`on_limit="cancel_running"`: cancel the key's runs (running, and queued behind them)."""
    active = Run.objects.active().filter(workflow=wf.name, concurrency_key=key)
    for run_id in active.order_by("created_at").values_list("id", flat=True):
        with suppress(RunAlreadyFinished):  # finished meanwhile: its slot is free anyway
            cancel_run(run_id, reason="replaced: a newer start took its place")


def _skip_unless_admitted(run: Run) -> None:
    """`on_limit="skip"`: the start's admission (after its commit) found no free slot."""
    if not Run.objects.filter(id=run.id, admitted=True).exists():
        with suppress(RunAlreadyFinished):
            cancel_run(run.id, reason="skipped")
        run.refresh_from_db()


def _create_run(
    workflow: str,
    run_input: Any,
    idempotency_key: str | None,
    concurrency_key: str | None = None,
    priority: int = 0,
) -> Run:
    """Insert the run and its run_created event; enqueue it (or admit it) after commit."""
    now = timezone.now()
    gated = concurrency_key is not None  # waits for a slot: not due until admitted
    run = Run(
        workflow=workflow,
        input=run_input,
        idempotency_key=idempotency_key,
        created_at=now,
        updated_at=now,
        wake_at=None if gated else now,
        last_seq=1,
        priority=priority,
        concurrency_key=concurrency_key,
        admitted=not gated,
    )
    payload = {"workflow": workflow, "input": run_input, "idempotency_key": idempotency_key}
    if gated or priority:
        payload.update(concurrency_key=concurrency_key, priority=priority)
    with transaction.atomic():
        run.save(force_insert=True)
        Event.objects.create(
            run=run, seq=1, type=EventType.RUN_CREATED, payload=payload, created_at=now
        )
        if gated:
            transaction.on_commit(lambda: admit(workflow, concurrency_key or ""))
        else:
            transaction.on_commit(lambda: enqueue_run(run.id, priority=priority))
    return run


def get_run_row(run_id: uuid.UUID | str) -> Run:
    try:
        rid = run_id if isinstance(run_id, uuid.UUID) else uuid.UUID(str(run_id))
    except ValueError:
        raise RunNotFound(f"{run_id!r} is not a run id") from None
    try:
        return Run.objects.get(id=rid)
    except Run.DoesNotExist:
        raise RunNotFound(f"no run {rid}") from None


def cancel_run(run_id: uuid.UUID | str, reason: str = "cancelled") -> Run:
    """Cancel a run that has not finished; raises RunAlreadyFinished otherwise.

    No new step starts after this commits: the executor's next checkpoint finds its lease gone.
    Sleeping or waiting runs stop at once; a running step may finish, but its result is unused.
    Child runs started by the run's fan-outs are cancelled with it.
    """
    run = get_run_row(run_id)
    now = timezone.now()
    write = HistoryWrite(
        run.id,
        UnfinishedGuard(),
        (EventDraft(EventType.RUN_CANCELLED, now, None, {"reason": reason}),),
        run=RunPatch(status=RunStatus.CANCELLED, finished_at=now, wake_at=None, release_lease=True),
        cancel_open_steps=True,
    )
    try:
        write_now(write, session=f"cancel/{run.id}/{uuid.uuid4().hex}", size=256)
    except CheckpointFailed as failure:
        if isinstance(failure.__cause__, RunAlreadyFinished):
            raise failure.__cause__ from None
        raise
    metrics.run_finished(run.workflow, RunStatus.CANCELLED)
    announce(run.id)
    _cancel_children(run.id)
    run_finished(run.id, run.workflow)  # its slot, if it held one, is free
    run.refresh_from_db()
    return run


def _cancel_children(run_id: uuid.UUID) -> None:
    children = Run.objects.active().filter(idempotency_key__startswith=child_run_key_prefix(run_id))
    for child_id in children.values_list("id", flat=True):
        with suppress(RunAlreadyFinished):  # a child that finished meanwhile needs no stop
            cancel_run(child_id, reason=f"parent run {run_id} was cancelled")


# -- callback posts ---------------------------------------------------------------------------

MAX_TOKEN_LENGTH = 64
# What token_urlsafe produces; anything else (a NUL byte, say) cannot be a token.
_TOKEN_TEXT = re.compile(r"[A-Za-z0-9_-]+")
_MISSING: Any = object()


@dataclass(frozen=True)
class CallbackReceipt:
    """What a post did: the callback's name, its status now and its current deadline."""

    run_id: uuid.UUID
    callback: str
    status: str
    deadline: datetime | None


def post_callback(
    token: str,
    *,
    result: Any = _MISSING,
    error: Any = None,
    heartbeat: bool = False,
    clock: Clock | None = None,
) -> CallbackReceipt:
    """Post a result, an error (`{"type", "message"}`) or a heartbeat to a callback.

    A result or error completes the callback once and wakes its run; a heartbeat moves its
    heartbeat deadline. Raises CallbackNotFound, CallbackAlreadyCompleted, RunAlreadyFinished,
    PayloadError (not JSON, malformed error) or PayloadTooLarge; nothing is written then.
    """
    given = (result is not _MISSING) + (error is not None) + bool(heartbeat)
    if given != 1:
        raise PayloadError("post exactly one of a result, an error or a heartbeat")
    now = (clock or SystemClock()).now()
    step = _open_step(token)
    limit = conf.get().MAX_PAYLOAD_BYTES
    current = step.as_row()
    events: tuple[EventDraft, ...] = ()
    size = 0
    if heartbeat:
        terms = CallbackTerms.from_input(step.input)
        created = step.started_at or step.created_at
        row = replace(current, wake_at=terms.deadline_after_heartbeat(created, now))
    elif result is not _MISSING:
        value, size = checked(result, f"callback {step.name!r} result", limit)
        row = replace(
            current, status=StepStatus.COMPLETED, result=value, finished_at=now, wake_at=None
        )
        events = (EventDraft("callback_received", now, step.id, {"result": value}),)
    else:
        record, size = checked(_error_record(error), f"callback {step.name!r} error", limit)
        row = replace(
            current, status=StepStatus.FAILED, error=record, finished_at=now, wake_at=None
        )
        events = (EventDraft("callback_received", now, step.id, {"error": record}),)
    # A result makes the run due now: if the enqueue below is lost, the sweep still finds it.
    due = None if heartbeat else RunPatch(wake_at=now)
    write = HistoryWrite(
        step.run_id, OpenStepGuard(step.id), events, (row,), run=due, wake=not heartbeat
    )
    _commit(write, step.name, 512 + 2 * size)
    if not heartbeat:
        enqueue_run(step.run_id, priority=step.run.priority)
    return CallbackReceipt(step.run_id, step.name, row.status, row.wake_at)


def _open_step(token: str) -> Step:
    step = None
    if (
        isinstance(token, str)
        and 0 < len(token) <= MAX_TOKEN_LENGTH
        and _TOKEN_TEXT.fullmatch(token)
    ):
        step = Step.objects.select_related("run").filter(callback_token=token).first()
    if step is None:
        raise CallbackNotFound("no callback has this token")
    if step.run.status in FINISHED_RUN_STATES:
        raise RunAlreadyFinished(f"the run of callback {step.name!r} has already finished")
    if step.status not in (StepStatus.PENDING, StepStatus.RUNNING):
        raise CallbackAlreadyCompleted(f"callback {step.name!r} has already been completed")
    return step


def _error_record(error: Any) -> dict[str, str]:
    if not isinstance(error, dict) or not isinstance(error.get("type"), str) or not error["type"]:
        raise PayloadError('a callback error must be an object with a non-empty string "type"')
    message = error.get("message", "")
    if not isinstance(message, str):
        raise PayloadError('a callback error\'s "message" must be a string')
    extra = sorted(set(error) - {"type", "message"})
    if extra:
        raise PayloadError(f"a callback error takes only type and message, not {', '.join(extra)}")
    return {"type": error["type"], "message": message}


def _commit(write: HistoryWrite, name: str, size: int) -> None:
    session = f"callback/{write.run_id}/{uuid.uuid4().hex}"
    try:
        write_now(write, session=session, size=size)
    except CheckpointFailed as failure:
        cause = failure.__cause__
        if isinstance(cause, RunAlreadyFinished):
            raise RunAlreadyFinished(f"the run of callback {name!r} has already finished") from None
        if isinstance(cause, StepChanged):
            raise CallbackAlreadyCompleted(
                f"callback {name!r} has already been completed"
            ) from None
        raise
