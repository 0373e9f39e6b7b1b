"""`FanfoldBackend`: Django's Tasks framework on durable runs.

`TASKS = {"default": {"BACKEND": "runtime.django_tasks.backend.FanfoldBackend"}}`. Enqueuing
a task starts a run of the one-step workflow `runtime.django_tasks.runner` (the result id is
the run id); the task's body is that run's step, so it is retried by a retry policy, taken over
when its worker dies, and its result is read from the run's records (runtime.django_tasks
.results). The run is written in the caller's transaction and its message sent when that
commits: a rolled-back enqueue runs nothing, and the task sees what its caller committed
(OPTIONS["enqueue_on_commit"] False: the run is written and sent at once even then).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Self, cast

from django.core import checks
from django.core.exceptions import ImproperlyConfigured

from runtime.core.clock import current_time
from runtime.core.retry import RetryPolicy
from runtime.django_tasks import queues
from runtime.django_tasks.compat import (
    TASK_MAX_PRIORITY,
    TASK_MIN_PRIORITY,
    BaseTaskBackend,
    InvalidTask,
    Task,
    TaskResult,
    TaskResultDoesNotExist,
    TaskResultStatus,
    normalize_json,
    task_enqueued,
)
from runtime.django_tasks.options import BadTaskOptions, TaskOptions
from runtime.django_tasks.results import TASK_WORKFLOW, result_of
from runtime.django_tasks.run_view import TASK_ATTRIBUTE
from runtime.django_tasks.workflow_tasks import (
    start_workflow_task,
    workflow_of,
    workflow_task_result,
)
from runtime.services.starting import start_run_soon
from runtime.store.connection import committed_apart, in_transaction


@dataclass(frozen=True, slots=True, kw_only=True)
class FanfoldTask(Task):
    """A Django task with Fanfold's extra options: `@task(retry=RetryPolicy(...))` retries its
    body by that policy (else the backend's OPTIONS["retry"], else Fanfold's default);
    `task.using(search={...})` sets the search attributes of the run an enqueue starts (a
    task that is a workflow: the attributes its workflow declares)."""

    retry: RetryPolicy | None = None
    search: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.retry is not None and not isinstance(self.retry, RetryPolicy):
            raise InvalidTask("task(retry=...) takes a runtime.RetryPolicy")
        if self.search is not None and not isinstance(self.search, Mapping):
            raise InvalidTask("task search= takes a dict of search attribute names to values")
        Task.__post_init__(self)

    def using(
        self,
        *,
        priority: int | None = None,
        queue_name: str | None = None,
        run_after: datetime | None = None,
        backend: str | None = None,
        search: Mapping[str, Any] | None = None,
    ) -> Self:
        """Django's `using`, and `search`: the run's search attributes for this enqueue."""
        changes: dict[str, Any] = {"priority": priority, "queue_name": queue_name,
                                   "run_after": run_after, "backend": backend}  # fmt: skip
        if search is not None:  # checked by __post_init__ (a copy: the caller's dict may change)
            changes["search"] = dict(search) if isinstance(search, Mapping) else search
        # Task.using's own changes and ours, in one copy (replace keeps the dataclass checks).
        return dataclasses.replace(self, **{k: v for k, v in changes.items() if v is not None})


def run_priority(priority: int) -> int:
    """A task's priority (-100 to 100) as a run's (0 to 9): ten equal bands, order kept."""
    span = TASK_MAX_PRIORITY - TASK_MIN_PRIORITY + 1
    return (int(priority) - TASK_MIN_PRIORITY) * 10 // span


def plain_task_search(task: Task) -> dict[str, Any]:
    """The search attributes of a plain task's run: its path as `task`. Only a task that is a
    workflow has attributes of its own (declared by its workflow): InvalidTask otherwise."""
    given = getattr(task, "search", None)
    if given:
        raise InvalidTask(
            f"task {task.module_path} is not a workflow: its run's one search attribute is "
            f"{TASK_ATTRIBUTE!r} (its path); a task that is a workflow (@task over "
            "@workflow(search=...)) takes attributes of its own"
        )
    return {TASK_ATTRIBUTE: task.module_path}


class FanfoldBackend(BaseTaskBackend):
    """Runs Django tasks as Fanfold runs: durable, retried, taken over after a crash."""

    task_class = FanfoldTask
    supports_defer = True
    supports_async_task = True
    supports_get_result = True
    supports_priority = True

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        try:
            self.settings = TaskOptions.parse(alias, self.options)
        except BadTaskOptions as exc:
            raise ImproperlyConfigured(str(exc)) from None
        self.bad_queues = sorted(q for q in self.queues if not isinstance(q, str) or not q)

    def default_policy(self) -> RetryPolicy | None:
        """The retry policy of this backend's tasks that name none."""
        return self.settings.retry

    def validate_task(self, task: Task) -> None:
        """Django's checks; a task that is a Fanfold workflow is checked as its function
        (the workflow's first parameter is its DurableContext, never a TaskContext)."""
        workflow = workflow_of(task)
        if workflow is None:
            super().validate_task(task)
            return
        if task.takes_context:
            raise InvalidTask(
                f"task {task.module_path} is a Fanfold workflow: it gets its DurableContext, "
                "not a TaskContext (takes_context=True)"
            )
        super().validate_task(dataclasses.replace(task, func=workflow.fn))

    def enqueue(self, task: Task, args: Any, kwargs: Any) -> TaskResult:
        """Start the task's run (in the caller's transaction, sent when it commits)."""
        self.validate_task(task)
        enqueued_at = current_time()
        # As TaskResult does: a value that is not JSON raises TypeError, before any write.
        call_args = cast(list[Any], normalize_json(list(args)))  # a list stays a list
        call_kwargs = cast(dict[str, Any], normalize_json(dict(kwargs)))
        meta = {
            "backend": self.alias,
            "priority": task.priority,
            "queue_name": task.queue_name,
            "run_after": None if task.run_after is None else task.run_after.isoformat(),
            "enqueued_at": enqueued_at.isoformat(),
        }
        workflow = workflow_of(task)
        # One start: its run and first event are written in one transaction (the caller's,
        # when there is one), and its message sent when that commits; with enqueue_on_commit
        # False, in a transaction of its own that commits now, whatever the caller's does.
        apart = self.settings.enqueue_on_commit is False and in_transaction()
        with committed_apart() if apart else nullcontext():
            if workflow is None:
                # Durable once this returns; its message leaves from a background publisher,
                # and one lost on the way is sent again by the run sweep.
                run_id = start_run_soon(
                    TASK_WORKFLOW,
                    [task.module_path, call_args, call_kwargs, meta],
                    priority=run_priority(task.priority),
                    search=plain_task_search(task),
                )
            else:  # the task is a workflow: a run of its own, what it was enqueued with beside
                meta["path"] = task.module_path
                run_id = start_workflow_task(
                    workflow,
                    call_args,
                    call_kwargs,
                    meta,
                    run_priority(task.priority),
                    task.run_after,
                    dict(getattr(task, "search", None) or {}),
                )
        queues.remember(run_id, task.queue_name)
        result: TaskResult[..., Any] = TaskResult(
            task=task,
            id=str(run_id),
            status=TaskResultStatus.READY,
            enqueued_at=enqueued_at,
            started_at=None,
            finished_at=None,
            last_attempted_at=None,
            args=call_args,
            kwargs=call_kwargs,
            backend=self.alias,
            errors=[],
            worker_ids=[],
        )
        task_enqueued.send(type(self), task_result=result)
        return result

    def get_result(self, result_id: str) -> TaskResult:
        """The task's result as its run's records say now; TaskResultDoesNotExist if none."""
        try:
            run_id = uuid.UUID(str(result_id))
        except ValueError:
            raise TaskResultDoesNotExist(result_id) from None
        found = result_of(run_id) or workflow_task_result(run_id)
        if found is None:
            raise TaskResultDoesNotExist(result_id)
        return found

    def check(self, **kwargs: Any) -> list[checks.CheckMessage]:
        """Queue names must be non-empty strings."""
        if self.bad_queues:
            return [
                checks.Error(
                    f'TASKS["{self.alias}"]["QUEUES"] holds invalid queue names',
                    hint="Each queue is a non-empty string, the name of a Celery queue.",
                    id="fanfold.E901",
                )
            ]
        return []
