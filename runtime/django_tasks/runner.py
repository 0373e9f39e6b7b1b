"""The workflow every Django task runs as, and the body of its one step.

`fanfold.django_task(ctx, path, args, kwargs, meta)` waits durably until the task's
`run_after` (when it has one), then runs the task's function as one step named after the
task, retried by the task's policy (`@task(retry=...)`), else the backend's OPTIONS["retry"],
else Fanfold's default. Each attempt's `step_started` event names the worker that took it;
the attempt sends Django's `task_started`, and the attempt that settles the task sends
`task_finished`.
"""

from __future__ import annotations

import functools
import uuid
from datetime import datetime
from typing import Any

from runtime.context import DurableContext
from runtime.core.clock import current_time
from runtime.core.current import current_step
from runtime.core.errors import describe_exception
from runtime.core.retry import DEFAULT_POLICY, GiveUp, RetryPolicy, decide
from runtime.django_tasks import queues
from runtime.django_tasks.compat import (
    Task,
    TaskContext,
    TaskResult,
    TaskResultStatus,
    normalize_json,
    set_return_value,
    task_finished,
    task_started,
)
from runtime.django_tasks.results import TASK_WORKFLOW, load_task, task_error
from runtime.django_tasks.run_view import TASK_ATTRIBUTE
from runtime.process.identity import worker_id
from runtime.registry import workflow
from runtime.store.runs.django_tasks import attempt_workers


def task_policy(task: Task, backend: Any = None) -> RetryPolicy:
    """The task's own policy, else its backend's default (`backend`: the task's, when the
    caller has it already), else Fanfold's default."""
    own = getattr(task, "retry", None)
    if own is not None:
        return own
    backend = backend or task.get_backend()
    default = getattr(backend, "default_policy", None)
    return (default() if callable(default) else None) or DEFAULT_POLICY


@workflow(name=TASK_WORKFLOW, search={TASK_ATTRIBUTE: str})
def run_django_task(
    ctx: DurableContext, path: str, args: list[Any], kwargs: dict[str, Any], meta: dict[str, Any]
) -> Any:
    """Run the Django task at `path` once durably: its run's one step."""
    task = load_task(path, meta)
    queues.remember(ctx.run_id, task.queue_name)  # its resumes go to the same queue
    if meta.get("run_after"):
        due = datetime.fromisoformat(meta["run_after"])
        # A replay finds the recorded timer whatever the seconds: only the first pass counts.
        ctx.sleep(max((due - current_time()).total_seconds(), 0.0))
    backend = task.get_backend()
    body = functools.partial(attempt, task, backend, ctx.run_id, meta)
    # The step's result is the run's: both commit together (DurableContext.step_ending_run).
    policy = task_policy(task, backend)
    return ctx.step_ending_run(body, *args, name=path, retry=policy, **kwargs)


def attempt(
    task: Task,
    backend: Any,
    run_id: uuid.UUID,
    meta: dict[str, Any],
    *args: Any,
    **kwargs: Any,
) -> Any:
    """One attempt of the task's body, inside its step: the worker is recorded, Django's
    signals sent, the context given when the task takes one."""
    number = current_step().attempt
    me = worker_id()
    now = current_time()
    # This attempt's start (naming its worker) may not be committed yet: it is queued, and
    # usually commits with the attempt's end.
    earlier = [] if number == 1 else attempt_workers(run_id)
    workers = [worker for n, worker in earlier if n < number] + [me]
    result: TaskResult[..., Any] = TaskResult(
        task=task,
        id=str(run_id),
        status=TaskResultStatus.RUNNING,
        enqueued_at=datetime.fromisoformat(meta["enqueued_at"]),
        started_at=now if number == 1 else None,
        finished_at=None,
        last_attempted_at=now,
        args=list(args),
        kwargs=dict(kwargs),
        backend=task.backend,
        errors=[],
        worker_ids=workers,
    )
    sender = type(backend)
    task_started.send(sender, task_result=result)
    try:
        if task.takes_context:
            value = task.call(TaskContext(task_result=result), *args, **kwargs)
        else:
            value = task.call(*args, **kwargs)
        value = normalize_json(value)
    except Exception as exc:
        if isinstance(decide(task_policy(task, backend), number, exc, lambda: 0.0), GiveUp):
            error = task_error(describe_exception(exc))
            _settled(sender, result, TaskResultStatus.FAILED, errors=[error])
        raise
    _settled(sender, result, TaskResultStatus.SUCCESSFUL, value=value)
    return value


def _settled(
    sender: type,
    result: TaskResult,
    status: str,
    value: Any = None,
    errors: list[Any] | None = None,
) -> None:
    object.__setattr__(result, "status", status)
    object.__setattr__(result, "finished_at", current_time())
    object.__setattr__(result, "errors", errors or [])
    set_return_value(result, value)
    task_finished.send(sender, task_result=result)
