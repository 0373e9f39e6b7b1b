"""A task's `TaskResult`, made from its run's records (runtime.store.runs.django_tasks).

Status: READY while the body has not started (the run is pending, or waits for `run_after`),
RUNNING while it runs or waits between attempts, SUCCESSFUL when the run completed, FAILED
when it failed or was cancelled. `errors` holds one TaskError per failed attempt, in order,
an attempt whose worker was lost (killed mid-body, then taken over) included: a
`runtime.core.errors.WorkerLost` naming the worker, so `attempts` and `errors` agree.
"""

from __future__ import annotations

import builtins
import re
import uuid
from datetime import datetime
from typing import Any

from django.utils.module_loading import import_string

from runtime.core.errors import WorkerLost
from runtime.django_tasks.compat import (
    InvalidTask,
    Task,
    TaskError,
    TaskResult,
    TaskResultStatus,
    set_return_value,
)
from runtime.django_tasks.run_view import TASK_WORKFLOW
from runtime.models import RunStatus
from runtime.store.runs.django_tasks import TaskFailure, TaskRunRecord, load_task_run

# Where each attempt of a task's body wrote {"attempt", "worker"} as it started, before
# `step_started` events named their worker: read for the runs recorded then.
ATTEMPTS_STREAM = "fanfold.task_attempts"
# The run value holding what a task that is a workflow was enqueued with (workflow_tasks).
TASK_META_KEY = "fanfold.task"

_FINISHED = {
    RunStatus.COMPLETED: TaskResultStatus.SUCCESSFUL,
    RunStatus.FAILED: TaskResultStatus.FAILED,
    RunStatus.CANCELLED: TaskResultStatus.FAILED,
}


def load_task(path: str, meta: dict[str, Any]) -> Task:
    """The task at `path` as it was enqueued: its priority, queue, run_after and backend."""
    found = import_string(path)
    if not isinstance(found, Task):
        raise InvalidTask(f"{path!r} is not a task")
    given = meta.get("run_after")
    run_after = None if given is None else datetime.fromisoformat(given)
    given_options = (meta.get("priority"), meta.get("queue_name"), run_after, meta.get("backend"))
    if given_options == (found.priority, found.queue_name, found.run_after, found.backend):
        return found  # enqueued as declared (the common case): `using` would copy it as it is
    priority, queue_name, _, backend = given_options
    return found.using(
        priority=priority, queue_name=queue_name, run_after=run_after, backend=backend
    )


def result_of(run_id: uuid.UUID) -> TaskResult | None:
    """The task result whose id is `run_id`, or None if no task's run has that id."""
    record = load_task_run(run_id, TASK_WORKFLOW, ATTEMPTS_STREAM)
    if record is None:
        return None
    path, args, kwargs, meta = record.input.get("args", [None, [], {}, {}])
    task = load_task(path, meta)
    attempts = record.attempts
    result: TaskResult[..., Any] = TaskResult(
        task=task,
        id=str(record.run_id),
        status=_status(record),
        enqueued_at=datetime.fromisoformat(meta["enqueued_at"]),
        started_at=attempts[0].started_at if attempts else None,
        finished_at=record.finished_at,
        last_attempted_at=attempts[-1].started_at if attempts else None,
        args=args,
        kwargs=kwargs,
        backend=meta["backend"],
        errors=[_failure(f) for f in record.failures] + _cancelled(record),
        worker_ids=[str(a.worker_id) for a in attempts],
    )
    if record.status == RunStatus.COMPLETED:
        set_return_value(result, record.result)
    return result


def _status(record: TaskRunRecord) -> TaskResultStatus:
    finished = _FINISHED.get(RunStatus(record.status))
    if finished is not None:
        return finished
    if record.task_step_started:
        return TaskResultStatus.RUNNING
    return TaskResultStatus.READY


WORKER_LOST = f"{WorkerLost.__module__}.{WorkerLost.__qualname__}"


def _failure(failure: TaskFailure) -> TaskError:
    if failure.error is not None:
        return task_error(failure.error)
    lost = failure.lost
    worker = lost.worker_id if lost is not None else None
    started = f" (started {lost.started_at.isoformat()})" if lost and lost.started_at else ""
    return TaskError(
        exception_class_path=WORKER_LOST,
        traceback=f"{WORKER_LOST}: worker lost: attempt {failure.attempt} on worker "
        f"{worker or 'unknown'}{started} never reported (the worker was killed or its lease "
        f"expired); attempt {failure.attempt + 1} took the task over",
    )


def _cancelled(record: TaskRunRecord) -> list[TaskError]:
    if record.status != RunStatus.CANCELLED:
        return []
    reason = (record.error or {}).get("message") or "cancelled"
    return [TaskError(exception_class_path="runtime.RunCancelled", traceback=str(reason))]


def task_error(record: dict[str, Any]) -> TaskError:
    """A step's error record as Django's TaskError: the exception's class path and traceback."""
    traceback = str(record.get("traceback") or "")
    return TaskError(
        exception_class_path=class_path(str(record.get("type") or "Exception"), traceback),
        traceback=traceback,
    )


def class_path(name: str, traceback: str) -> str:
    """The exception class's dotted path: a step's error record keeps the class name and the
    formatted traceback, whose exception line names the class by module and qualified name
    (builtins by name alone)."""
    line = re.compile(rf"^((?:[\w]+\.)*{re.escape(name)})(?::|$)", re.MULTILINE)
    found = line.findall(traceback)
    if found and "." in found[-1]:
        return str(found[-1])
    return f"builtins.{name}" if isinstance(getattr(builtins, name, None), type) else name
