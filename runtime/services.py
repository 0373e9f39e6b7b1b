"""The runtime's services: start, look up and cancel runs. They own the transactions."""

from __future__ import annotations

import uuid
from contextlib import suppress
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from runtime import conf
from runtime.checkpoint.batching import Checkpoint
from runtime.checkpoint.errors import CheckpointFailed
from runtime.core.errors import FanfoldError, RunAlreadyFinished
from runtime.core.identity import child_run_key_prefix
from runtime.core.jsonvalues import checked
from runtime.core.writes import EventDraft, HistoryWrite, RunPatch, UnfinishedGuard
from runtime.models import Event, EventType, Run, RunStatus
from runtime.registry import WorkflowFunction, registry
from runtime.store import writer


class RunNotFound(FanfoldError, LookupError):
    code = "not_found"


def start_run(
    workflow: str | WorkflowFunction[Any],
    args: list[Any] | tuple[Any, ...] = (),
    kwargs: dict[str, Any] | None = None,
    *,
    idempotency_key: str | None = None,
) -> tuple[Run, bool]:
    """Create a run and enqueue it; returns (run, created).

    A repeated idempotency key returns the existing run, whatever its state. Unknown workflows,
    arguments that are not JSON, too large, or that do not fit the workflow raise before
    anything is recorded.
    """
    wf = registry.workflow(workflow)
    kwargs = kwargs or {}
    if idempotency_key is not None and (
        not isinstance(idempotency_key, str) or not idempotency_key
    ):
        raise ValueError("idempotency_key must be a non-empty string")
    if idempotency_key and len(idempotency_key) > 255:
        raise ValueError("idempotency_key must be at most 255 characters")
    if idempotency_key and "\x00" in idempotency_key:
        raise ValueError("idempotency_key must not contain NUL (U+0000)")
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
    now = timezone.now()
    run = Run(
        workflow=wf.name,
        input=run_input,
        idempotency_key=idempotency_key,
        created_at=now,
        updated_at=now,
        wake_at=now,
        last_seq=1,
    )
    try:
        with transaction.atomic():
            run.save(force_insert=True)
            Event.objects.create(
                run=run,
                seq=1,
                type=EventType.RUN_CREATED,
                payload={
                    "workflow": wf.name,
                    "input": run_input,
                    "idempotency_key": idempotency_key,
                },
                created_at=now,
            )
            transaction.on_commit(lambda: _enqueue(run.id))
    except IntegrityError:
        if idempotency_key:
            existing = Run.objects.filter(idempotency_key=idempotency_key).first()
            if existing is not None:
                return existing, False
        raise
    return run, True


def _enqueue(run_id: uuid.UUID) -> None:
    from runtime.dispatch import enqueue_run

    enqueue_run(run_id)


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
    session = f"cancel/{run.id}/{uuid.uuid4().hex}"
    w = writer()
    try:
        w.write(Checkpoint(session=session, payload=write, size=256, sync=True))
    except CheckpointFailed as failure:
        if isinstance(failure.__cause__, RunAlreadyFinished):
            raise failure.__cause__ from None
        raise
    finally:
        w.reset_session(session)
    _cancel_children(run.id)
    run.refresh_from_db()
    return run


def _cancel_children(run_id: uuid.UUID) -> None:
    children = Run.objects.active().filter(idempotency_key__startswith=child_run_key_prefix(run_id))
    for child_id in children.values_list("id", flat=True):
        with suppress(RunAlreadyFinished):  # a child that finished meanwhile needs no stop
            cancel_run(child_id, reason=f"parent run {run_id} was cancelled")
