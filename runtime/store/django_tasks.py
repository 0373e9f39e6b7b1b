"""What a Django task's result is made of, read from its run: the run row, its task step,
the step's attempt events and the workers that took each attempt (runtime.django_tasks)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from runtime.models import Event, EventType, Run, Step, StepKind, StreamChunk


@dataclass(frozen=True)
class TaskAttempt:
    """One attempt of a task's body: its number, when it started, which worker took it."""

    attempt: int
    started_at: datetime | None
    worker_id: str


@dataclass(frozen=True)
class TaskRunRecord:
    """A task's run as its result needs it. `failures` are the error records of the failed
    attempts in order (each retried one, then the final one)."""

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
    failures: tuple[dict[str, Any], ...]


_FAILURES = (EventType.STEP_RETRYING, EventType.STEP_FAILED)


def load_task_run(run_id: uuid.UUID, workflow: str, attempts_stream: str) -> TaskRunRecord | None:
    """The run `run_id` of `workflow` with what its task step recorded; None if there is no
    such run. Attempts come from `attempts_stream`, where each attempt wrote its worker."""
    run = (
        Run.objects.filter(id=run_id, workflow=workflow)
        .only("id", "workflow", "status", "input", "result", "error", "created_at", "finished_at")
        .first()
    )
    if run is None:
        return None
    step = (
        Step.objects.filter(run_id=run_id, kind=StepKind.STEP)
        .order_by("-position")
        .values_list("id", flat=True)
        .first()
    )
    failures: list[dict[str, Any]] = []
    started: dict[int, datetime] = {}
    if step is not None:
        events = Event.objects.filter(
            run_id=run_id, step_id=step, type__in=(EventType.STEP_STARTED, *_FAILURES)
        ).order_by("seq")
        for kind, payload, at in events.values_list("type", "payload", "created_at"):
            payload = payload or {}
            if kind == EventType.STEP_STARTED:
                started.setdefault(int(payload.get("attempt", 0)), at)
            elif isinstance(payload.get("error"), dict):
                failures.append(payload["error"])
    chunks = StreamChunk.objects.filter(run_id=run_id, stream=attempts_stream).order_by("seq")
    attempts = tuple(
        TaskAttempt(int(value["attempt"]), started.get(int(value["attempt"])), str(value["worker"]))
        for value in chunks.values_list("value", flat=True)
        if isinstance(value, dict) and "attempt" in value and "worker" in value
    )
    return TaskRunRecord(
        run_id=run.id,
        workflow=run.workflow,
        status=run.status,
        input=run.input if isinstance(run.input, dict) else {},
        result=run.result,
        error=run.error,
        created_at=run.created_at,
        finished_at=run.finished_at,
        task_step_started=bool(started),
        attempts=attempts,
        failures=tuple(failures),
    )


def attempt_workers(run_id: uuid.UUID, attempts_stream: str) -> list[str]:
    """The workers that took the task's attempts so far, in order (from `attempts_stream`)."""
    chunks = StreamChunk.objects.filter(run_id=run_id, stream=attempts_stream).order_by("seq")
    return [
        str(value["worker"])
        for value in chunks.values_list("value", flat=True)
        if isinstance(value, dict) and "worker" in value
    ]


def task_queue_name(run_id: uuid.UUID, workflow: str) -> str | None:
    """The `queue_name` a task's run was enqueued with; None if it is no run of `workflow`."""
    found = Run.objects.filter(id=run_id, workflow=workflow).values_list("input", flat=True).first()
    args = found.get("args") if isinstance(found, dict) else None
    meta = args[3] if isinstance(args, list) and len(args) == 4 else None
    return meta.get("queue_name") if isinstance(meta, dict) else None
