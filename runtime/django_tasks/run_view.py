"""How a Django task's run reads in the admin and the API: its task's path as its name, the
task's arguments as its input. Importable without Django's Tasks framework (the admin and the
API show every run, whether or not the framework is installed)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

TASK_WORKFLOW = "fanfold.django_task"
# The search attribute every plain task's run carries: the task's path (runtime.django_tasks
# .runner declares it), so that a task's runs are found by an indexed attribute query.
TASK_ATTRIBUTE = "task"


@dataclass(frozen=True)
class TaskRunView:
    """A Django task's run as people read it: the task's path is its name, its arguments are
    its input, and the envelope (backend, queue, priority, enqueued_at...) a detail."""

    path: str
    arguments: dict[str, Any]
    envelope: dict[str, Any]


def task_run_view(workflow: str, run_input: Any) -> TaskRunView | None:
    """The task view of a run of `workflow` with this input; None for a run of any other
    workflow (or an input of another shape)."""
    if workflow != TASK_WORKFLOW or not isinstance(run_input, dict):
        return None
    args = run_input.get("args")
    if not (isinstance(args, list) and len(args) == 4 and isinstance(args[0], str)):
        return None
    path, task_args, task_kwargs, meta = args
    envelope = {"task": path, **meta} if isinstance(meta, dict) else {"task": path}
    return TaskRunView(path, {"args": task_args, "kwargs": task_kwargs}, envelope)
