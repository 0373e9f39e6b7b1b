"""`step_of(task)`: a Django task's function as a registered Fanfold step, so that a workflow
can `ctx.step` it or `ctx.map` over it. `step_source` lets the task itself be given:
`ctx.step(task, ...)`, `ctx.map(task, items)` (runtime.registry's step sources)."""

from __future__ import annotations

from typing import Any

from django.utils.module_loading import import_string

from runtime.django_tasks.compat import Task
from runtime.registry import StepFunction, WorkflowFunction, registry, step


def step_of(task: Task) -> StepFunction[..., Any]:
    """The Django task `task` as a registered Fanfold step, for `ctx.step` and `ctx.map` in a
    workflow: its body runs as the workflow's step (or fan-out branch), with the task's retry
    policy, not as a task run of its own. Registered once, named by the task's path: call it
    at module level, so that every worker has the step."""
    if not isinstance(task, Task):
        raise TypeError(f"step_of takes a Django task, not {type(task).__name__}")
    if isinstance(task.func, WorkflowFunction):
        raise TypeError(
            f"task {task.module_path} is a Fanfold workflow: fan out over `task.func` "
            "(a child workflow per item), it cannot be a step"
        )
    if task.takes_context:
        raise TypeError(f"task {task.module_path} takes a TaskContext: it cannot be a step")
    name = task.module_path
    known = registry.steps.registered(name)
    if known is not None:
        return known
    return step(name=name, retry=getattr(task, "retry", None))(task.func)


def step_source(value: object) -> StepFunction[..., Any] | None:
    """The step of a Django task: given the task (`ctx.step(task)`), or its path as a step
    name (a worker running a branch of `ctx.map(task, items)` that another process started:
    the name is imported, and only a task there counts). None for anything else."""
    if isinstance(value, str):
        if "." not in value:
            return None
        try:
            value = import_string(value)
        except ImportError:
            return None
    return step_of(value) if isinstance(value, Task) else None
