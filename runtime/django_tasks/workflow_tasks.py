"""A Django task that is itself a Fanfold workflow: `@task` over `@workflow(...)`.

Enqueuing it starts a run of that workflow (not of the one-step task workflow): the task
result's id is that run's id, its steps retry by their own policies, and its result is the
run's. What the task was enqueued with is kept as the run's value `TASK_META_KEY`, written
in the same transaction as the run; `run_after` delays the run's start durably (a debounced
start of a key of its own, runtime.messaging.debounce).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from runtime.core.clock import current_time
from runtime.core.errors import InvalidArguments
from runtime.django_tasks.compat import (
    Task,
    TaskError,
    TaskResult,
    TaskResultStatus,
    set_return_value,
)
from runtime.django_tasks.results import TASK_META_KEY, load_task, task_error
from runtime.messaging.debounce import DebounceTerms, start_debounced
from runtime.models import RunStatus
from runtime.registry import WorkflowFunction
from runtime.services.starting import start_run
from runtime.store.runs.django_tasks import (
    WorkflowTaskRecord,
    load_workflow_task_run,
    one_transaction,
    record_task_meta,
)

_STATUS = {
    RunStatus.PENDING: TaskResultStatus.READY,
    RunStatus.RUNNING: TaskResultStatus.RUNNING,
    RunStatus.WAITING: TaskResultStatus.RUNNING,
    RunStatus.COMPLETED: TaskResultStatus.SUCCESSFUL,
    RunStatus.FAILED: TaskResultStatus.FAILED,
    RunStatus.CANCELLED: TaskResultStatus.FAILED,
}


def workflow_of(task: Task) -> WorkflowFunction[..., Any] | None:
    """The Fanfold workflow the task's function is, or None for a plain function."""
    func = task.func
    return func if isinstance(func, WorkflowFunction) else None


def start_workflow_task(
    workflow: WorkflowFunction[..., Any],
    args: list[Any],
    kwargs: dict[str, Any],
    meta: dict[str, Any],
    priority: int,
    run_after: datetime | None,
    search: dict[str, Any] | None = None,
) -> uuid.UUID:
    """Start the task's run of `workflow` with its meta and search attributes, in one
    transaction (the caller's when there is one: the run is sent when that commits); its id.
    InvalidArguments for attributes with `run_after` (a delayed start takes none, as a
    debounced `start` does)."""
    delay = 0.0 if run_after is None else (run_after - current_time()).total_seconds()
    with one_transaction():
        if delay > 0:
            if search:
                raise InvalidArguments("a task delayed by run_after takes no search attributes")
            terms = DebounceTerms.of(delay, f"{TASK_META_KEY}:{uuid.uuid4()}", None)
            run, _ = start_debounced(workflow, args, kwargs, terms, priority)
        else:
            run, _ = start_run(workflow, args, kwargs, priority=priority, search=search)
        record_task_meta(run.id, TASK_META_KEY, meta)
    return run.id


def workflow_task_result(run_id: uuid.UUID) -> TaskResult | None:
    """The result of the task that is a workflow whose run is `run_id`; None if it is not
    the run of such a task."""
    record = load_workflow_task_run(run_id, TASK_META_KEY)
    if record is None:
        return None
    meta = record.meta
    started = record.started_at if record.status != RunStatus.PENDING else None
    result: TaskResult[..., Any] = TaskResult(
        task=load_task(meta["path"], meta),
        id=str(record.run_id),
        status=_STATUS[RunStatus(record.status)],
        enqueued_at=datetime.fromisoformat(meta["enqueued_at"]),
        started_at=started,
        finished_at=record.finished_at,
        # A workflow is attempted once: its steps retry within it, a takeover carries it on.
        last_attempted_at=started,
        args=list(record.input.get("args", [])),
        kwargs=dict(record.input.get("kwargs", {})),
        backend=meta["backend"],
        errors=_errors(record),
        worker_ids=[record.started_by] if started and record.started_by else [],
    )
    if record.status == RunStatus.COMPLETED:
        set_return_value(result, record.result)
    return result


def _errors(record: WorkflowTaskRecord) -> list[TaskError]:
    if record.status == RunStatus.FAILED and record.error:
        return [task_error(record.error)]
    if record.status == RunStatus.CANCELLED:
        reason = (record.error or {}).get("message") or "cancelled"
        return [TaskError(exception_class_path="runtime.RunCancelled", traceback=str(reason))]
    return []
