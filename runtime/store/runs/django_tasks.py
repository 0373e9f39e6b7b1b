"""What a Django task's result is made of, read from its run: the run row, its task step,
the step's attempt events and the workers that took each attempt (runtime.django_tasks)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from django.db import transaction

from runtime.models import Event, EventType, Run, Step, StepKind, StreamChunk
from runtime.store.messaging.values import latest_value, upsert_value


@dataclass(frozen=True)
class TaskAttempt:
    """One attempt of a task's body: its number, when it started, which worker took it."""

    attempt: int
    started_at: datetime | None
    worker_id: str | None


@dataclass(frozen=True)
class TaskFailure:
    """A failed attempt of a task's body: its error record, or, for an attempt whose worker
    was lost before it reported (a later attempt took the task over), `lost` and no error."""

    attempt: int
    error: dict[str, Any] | None
    lost: TaskAttempt | None = None


@dataclass(frozen=True)
class TaskRunRecord:
    """A task's run as its result needs it. `failures` are the failed attempts in order of
    attempt: each retried one, each one lost with its worker, then the final one."""

    run_id: uuid.UUID
    workflow: str
    status: str
    input: dict[str, Any]
    result: Any
    error: dict[str, Any] | None
    created_at: datetime
    finished_at: datetime | None
    task_step_started: bool
    attempts: tuple[TaskAttempt, ...]
    failures: tuple[TaskFailure, ...]


_FAILURES = (EventType.STEP_RETRYING, EventType.STEP_FAILED)


def load_task_run(run_id: uuid.UUID, workflow: str, attempts_stream: str) -> TaskRunRecord | None:
    """The run `run_id` of `workflow` with what its task step recorded; None if there is no
    such run. Each attempt's `step_started` event names its worker; a run recorded before
    they did has its workers in `attempts_stream`, where each attempt wrote its own."""
    run = (
        Run.objects.filter(id=run_id, workflow=workflow)
        .only("id", "workflow", "status", "input", "result", "error", "created_at", "finished_at")
        .first()
    )
    if run is None:
        return None
    failures: list[TaskFailure] = []
    attempts: list[TaskAttempt] = []
    for kind, payload, at in _task_step_events(run_id, (EventType.STEP_STARTED, *_FAILURES)):
        if kind == EventType.STEP_STARTED:
            attempts.append(TaskAttempt(int(payload.get("attempt", 0)), at, payload.get("worker")))
        elif isinstance(payload.get("error"), dict):
            failures.append(TaskFailure(int(payload.get("attempt", 0)), payload["error"]))
    if any(a.worker_id is None for a in attempts):
        written = _stream_workers(run_id, attempts_stream)
        attempts = [replace(a, worker_id=a.worker_id or written.get(a.attempt)) for a in attempts]
    # An attempt that started, reported nothing, and was followed by another: its worker was
    # lost and the takeover ran the body again (runtime.core.history.next_step_action).
    reported = {f.attempt for f in failures}
    last = max((a.attempt for a in attempts), default=0)
    failures += [
        TaskFailure(a.attempt, None, lost=a)
        for a in attempts
        if a.attempt < last and a.attempt not in reported
    ]
    failures.sort(key=lambda f: f.attempt)
    return TaskRunRecord(
        run_id=run.id,
        workflow=run.workflow,
        status=run.status,
        input=run.input if isinstance(run.input, dict) else {},
        result=run.result,
        error=run.error,
        created_at=run.created_at,
        finished_at=run.finished_at,
        task_step_started=bool(attempts),
        attempts=tuple(a for a in attempts if a.worker_id is not None),
        failures=tuple(failures),
    )


def attempt_workers(run_id: uuid.UUID) -> list[tuple[int, str]]:
    """(attempt, worker) of the task's attempts whose start is recorded, in order."""
    return [
        (int(payload.get("attempt", 0)), str(payload["worker"]))
        for _, payload, _ in _task_step_events(run_id, (EventType.STEP_STARTED,))
        if "worker" in payload
    ]


def _task_step_events(
    run_id: uuid.UUID, types: tuple[str, ...]
) -> list[tuple[str, dict[str, Any], datetime]]:
    """(type, payload, created_at) of the task step's events of these types, in order."""
    step = (
        Step.objects.filter(run_id=run_id, kind=StepKind.STEP)
        .order_by("-position")
        .values_list("id", flat=True)
        .first()
    )
    if step is None:
        return []
    events = Event.objects.filter(run_id=run_id, step_id=step, type__in=types).order_by("seq")
    return [
        (kind, payload if isinstance(payload, dict) else {}, at)
        for kind, payload, at in events.values_list("type", "payload", "created_at")
    ]


def _stream_workers(run_id: uuid.UUID, attempts_stream: str) -> dict[int, str]:
    chunks = StreamChunk.objects.filter(run_id=run_id, stream=attempts_stream).order_by("seq")
    return {
        int(value["attempt"]): str(value["worker"])
        for value in chunks.values_list("value", flat=True)
        if isinstance(value, dict) and "attempt" in value and "worker" in value
    }


def task_queue_name(run_id: uuid.UUID, workflow: str, meta_key: str) -> str | None:
    """The `queue_name` a task's run was enqueued with: from its input if it is a run of
    `workflow`, else from its value `meta_key` (a task that is a workflow); None if neither."""
    found = Run.objects.filter(id=run_id).values_list("workflow", "input").first()
    if found is None:
        return None
    meta: Any = None
    if found[0] == workflow:
        args = found[1].get("args") if isinstance(found[1], dict) else None
        meta = args[3] if isinstance(args, list) and len(args) == 4 else None
    else:
        meta = task_meta(run_id, meta_key)
    return meta.get("queue_name") if isinstance(meta, dict) else None


@contextmanager
def one_transaction() -> Iterator[None]:
    """The block's writes commit together: in the caller's transaction when there is one."""
    with transaction.atomic():
        yield


def record_task_meta(run_id: uuid.UUID, meta_key: str, meta: dict[str, Any]) -> None:
    """Keep what a task was enqueued with as its run's value `meta_key` (a task that is a
    workflow: its run's input is the workflow's own)."""
    upsert_value(run_id, meta_key, meta, position=0)


def task_meta(run_id: uuid.UUID, meta_key: str) -> dict[str, Any] | None:
    """What a task that is a workflow was enqueued with; None if the run has no such value."""
    value = latest_value(run_id, meta_key)
    return value if isinstance(value, dict) else None


@dataclass(frozen=True)
class WorkflowTaskRecord:
    """A run of a task that is a workflow, as its result needs it: the run row, what the task
    was enqueued with, and the worker that started the run (None before it started)."""

    run_id: uuid.UUID
    status: str
    input: dict[str, Any]
    result: Any
    error: dict[str, Any] | None
    started_at: datetime | None
    finished_at: datetime | None
    meta: dict[str, Any]
    started_by: str | None


def load_workflow_task_run(run_id: uuid.UUID, meta_key: str) -> WorkflowTaskRecord | None:
    """The run `run_id` of a task that is a workflow; None if the run has no `meta_key` value
    (no such run, or not a task's)."""
    meta = task_meta(run_id, meta_key)
    run = (
        Run.objects.filter(id=run_id)
        .only("id", "status", "input", "result", "error", "started_at", "finished_at")
        .first()
    )
    if meta is None or run is None:
        return None
    started = (
        Event.objects.filter(run_id=run_id, type=EventType.RUN_STARTED)
        .values_list("payload", flat=True)
        .first()
    )
    worker = started.get("worker") if isinstance(started, dict) else None
    return WorkflowTaskRecord(
        run_id=run.id,
        status=run.status,
        input=run.input if isinstance(run.input, dict) else {},
        result=run.result,
        error=run.error,
        started_at=run.started_at,
        finished_at=run.finished_at,
        meta=meta,
        started_by=None if worker is None else str(worker),
    )
