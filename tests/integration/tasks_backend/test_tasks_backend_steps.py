"""A Django task given to `ctx.step` and `ctx.map` as a step (contract 2h), in a sync and an
async workflow, on real PostgreSQL with the branches delivered in this process."""

from __future__ import annotations

from typing import Any

import pytest

from runtime import workflow
from runtime.handles import start
from runtime.models import Run, RunStatus, Step
from runtime.registry import registry
from runtime.testing import InMemoryDispatcher, use_dispatcher
from tests.support import sample_tasks as tasks


@workflow(name="tests.task_steps.sync")
def sync_over_tasks(ctx: Any, numbers: list[int]) -> dict[str, Any]:
    total = ctx.step(tasks.add, numbers[0], numbers[1])
    return {"total": total, "tripled": ctx.map(tasks.triple, numbers)}


@workflow(name="tests.task_steps.async")
async def async_over_tasks(ctx: Any, numbers: list[int]) -> dict[str, Any]:
    doubled = await ctx.step(tasks.async_double, numbers[0])
    total = await ctx.step(tasks.add, numbers[0], numbers[1])
    return {"doubled": doubled, "total": total, "tripled": await ctx.map(tasks.triple, numbers)}


def _finish(name: str, numbers: list[int]) -> Run:
    with use_dispatcher(InMemoryDispatcher()) as dispatcher:
        assert isinstance(dispatcher, InMemoryDispatcher)
        run = start(name, numbers)
        dispatcher.join(timeout=60)
    row = Run.objects.get(id=run.id)
    assert row.status == RunStatus.COMPLETED, row.error
    return row


def test_tasks_backend_a_sync_workflow_steps_and_maps_a_task() -> None:
    row = _finish("tests.task_steps.sync", [2, 5, 7])
    assert row.result == {"total": 7, "tripled": [6, 15, 21]}
    names = set(Step.objects.filter(run_id=row.id).values_list("name", flat=True))
    assert {tasks.add.module_path, tasks.triple.module_path} <= names


def test_tasks_backend_an_async_workflow_steps_and_maps_a_task() -> None:
    row = _finish("tests.task_steps.async", [4, 1])
    assert row.result == {"doubled": 8, "total": 5, "tripled": [12, 3]}


class ForgettingDispatcher(InMemoryDispatcher):
    """Forgets the task's step when the workflow publishes its branches: they then run as on
    a worker process that never ran the workflow (nor registered the step)."""

    def publish_branches(self, *args: Any, **kwargs: Any) -> None:
        registry.steps.pop(tasks.triple.module_path, None)
        super().publish_branches(*args, **kwargs)


def test_tasks_backend_a_worker_finds_a_mapped_tasks_step_by_its_name() -> None:
    original = registry.steps.registered(tasks.triple.module_path)
    try:
        with use_dispatcher(ForgettingDispatcher()) as dispatcher:
            assert isinstance(dispatcher, ForgettingDispatcher)
            run = start("tests.task_steps.sync", [1, 2])
            dispatcher.join(timeout=60)
    finally:
        if original is not None:
            registry.steps[tasks.triple.module_path] = original
    row = Run.objects.get(id=run.id)
    assert row.status == RunStatus.COMPLETED, row.error
    assert row.result == {"total": 3, "tripled": [3, 6]}
    assert registry.steps.registered(tasks.triple.module_path) is not None  # found by name


def test_tasks_backend_a_task_that_takes_a_context_is_no_step() -> None:
    from runtime.django_tasks.steps import step_source

    with pytest.raises(TypeError, match="TaskContext"):
        step_source(tasks.attempt_number)
    assert step_source("tests.support.sample_tasks.no_such_task") is None
    assert step_source("os.path.join") is None  # importable, but not a task
    assert step_source("nodots") is None
    assert step_source(tasks.triple) is registry.steps[tasks.triple.module_path]
