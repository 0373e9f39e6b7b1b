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
from runtime.core.callbacks import CallbackTerms, token_digest
from runtime.core.clock import Clock, SystemClock
from runtime.core.errors import (
    CallbackAlreadyCompleted,
    CallbackNotFound,
    IdempotencyConflict,
    PayloadError,
    ReservedIdempotencyKey,
    RunAlreadyFinished,
    RunNotFound,
    StepChanged,
)
from runtime.core.identity import (
    RESERVED_KEY_PREFIXES,
    check_idempotency_key,
    child_run_key_prefix,
    is_reserved_key,
)
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
from runtime.store.payload_forms import StoredForms
from runtime.streaming.wakeups import announce

Actor = dict[str, Any]  # who acted, as recorded in events: runtime.access.actors.actor_of


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
) -> tuple[Run, bool]:
    """Create a run and enqueue it; returns (run, created).

    `owner` (a user or a user's primary key) is recorded on the run. A repeated idempotency
    key of the same owner and workflow returns the existing run, whatever its state, or raises
    IdempotencyConflict if the arguments differ; a key in the runtime's own namespace raises
    ReservedIdempotencyKey (the runtime passes its keys as `runtime_key`). Unknown workflows,
    arguments that are not JSON, too large, or that do not fit the workflow raise before
    anything is recorded. A run of a workflow with `concurrency=N` waits `pending` until
    admitted (runtime.flow.admission), by `priority` (0-9, higher first), then FIFO.
    """
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
        run = _create_run(wf.name, run_input, idem, key, priority, owner_id, size)
    except IntegrityError:
        if idem:
            existing = _keyed_run(owner_id, wf.name, idem, run_input)
            if existing is not None:
                return existing, False
        raise
    if at_limit and wf.flow.on_limit == "skip":
        _skip_unless_admitted(run)
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
    existing = Run.objects.filter(owner_id=owner_id, workflow=workflow, idempotency_key=key)
    run = existing.first()
    if run is not None and run.input != run_input:
        raise IdempotencyConflict(
            f"idempotency key {key!r} already started run {run.id} of {workflow!r} "
            "with other arguments"
        )
    return run


def _at_limit(wf: WorkflowFunction[Any], key: str) -> bool:
    in_use = Run.objects.active().filter(workflow=wf.name, concurrency_key=key, admitted=True)
    return in_use.count() >= (wf.flow.concurrency or 0)


def _cancel_key(wf: WorkflowFunction[Any], key: str, owner_id: int | None) -> None:
    """`on_limit="cancel_running"`: cancel the key's runs (running, and queued behind them)
    that this start's owner owns; another user's runs keep their slots (the start queues)."""
    active = Run.objects.active().filter(workflow=wf.name, concurrency_key=key, owner_id=owner_id)
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
    owner_id: int | None = None,
    size: int | None = None,
) -> Run:
    """Insert the run and its run_created event; enqueue it (or admit it) after commit.

    The input and the event's payload are written in their stored forms (encrypted, or in the
    payload storage when large: runtime.store.payload_forms); `size` is the input's JSON bytes.
    """
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
        owner_id=owner_id,
    )
    payload = {"workflow": workflow, "input": run_input, "idempotency_key": idempotency_key}
    if gated or priority:
        payload.update(concurrency_key=concurrency_key, priority=priority)
    if owner_id is not None:  # the log names the owner too: it is the source of truth
        payload["owner"] = owner_id
    forms = StoredForms()
    bound = None if size is None else size + 1024
    with transaction.atomic():
        run.input = forms.form(run_input, run.id, bound)
        run.save(force_insert=True)
        run.input = run_input
        Event.objects.create(
            run=run,
            seq=1,
            type=EventType.RUN_CREATED,
            payload=forms.form(payload, run.id, bound),
            created_at=now,
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


def cancel_run(
    run_id: uuid.UUID | str, reason: str = "cancelled", *, by: Actor | None = None
) -> Run:
    """Cancel a run that has not finished; raises RunAlreadyFinished otherwise.

    `by` (runtime.access.actors.actor_of) names the user who cancelled, in the event.
    No new step starts after this commits: the executor's next checkpoint finds its lease gone.
    Sleeping or waiting runs stop at once; a running step may finish, but its result is unused.
    Child runs started by the run's fan-outs are cancelled with it.
    """
    run = get_run_row(run_id)
    now = timezone.now()
    write = HistoryWrite(
        run.id,
        UnfinishedGuard(),
        (EventDraft(EventType.RUN_CANCELLED, now, None, with_actor({"reason": reason}, by)),),
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
    _cancel_children(run.id, run.owner_id)
    run_finished(run.id, run.workflow)  # its slot, if it held one, is free
    run.refresh_from_db()
    return run


def _cancel_children(run_id: uuid.UUID, owner_id: int | None) -> None:
    # Children have their parent's owner: a run of anyone else never counts as a child.
    children = Run.objects.active().filter(
        owner_id=owner_id, idempotency_key__startswith=child_run_key_prefix(run_id)
    )
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
    by: Actor | None = None,
) -> CallbackReceipt:
    """Post a result, an error (`{"type", "message"}`) or a heartbeat to a callback.

    `by` names the authenticated user who posted, if any, in the callback_received event.
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
        events = (EventDraft("callback_received", now, step.id, with_actor({"result": value}, by)),)
    else:
        record, size = checked(_error_record(error), f"callback {step.name!r} error", limit)
        row = replace(
            current, status=StepStatus.FAILED, error=record, finished_at=now, wake_at=None
        )
        events = (EventDraft("callback_received", now, step.id, with_actor({"error": record}, by)),)
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
        digest = token_digest(token)  # only the digest is stored
        step = Step.objects.select_related("run").filter(callback_token=digest).first()
    if step is None:
        raise CallbackNotFound("no callback has this token")
    if step.run.status in FINISHED_RUN_STATES:
        raise RunAlreadyFinished(f"the run of callback {step.name!r} has already finished")
    if step.status not in (StepStatus.PENDING, StepStatus.RUNNING):
        raise CallbackAlreadyCompleted(f"callback {step.name!r} has already been completed")
    return step


def with_actor(payload: dict[str, Any], by: Actor | None) -> dict[str, Any]:
    """An event payload with `by` (who acted: runtime.access.actors.actor_of) when known.

    Operator actions (cancel, fork, retry, callback posts, messages and signals sent through
    the API) add it to the event they record, so the run's log says who did what.
    """
    return payload if by is None else {**payload, "by": by}


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
