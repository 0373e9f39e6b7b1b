"""`step_of(task)`: a Django task's function as a registered Fanfold step, so that a workflow
can `ctx.step` it or `ctx.map` over it."""

from __future__ import annotations

from typing import Any

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
    known = registry.steps.get(name)
    if known is not None:
        return known
    return step(name=name, retry=getattr(task, "retry", None))(task.func)
