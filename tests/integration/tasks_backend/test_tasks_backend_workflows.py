"""A Django task that is itself a Fanfold workflow, on real PostgreSQL: enqueuing it starts a
run of that workflow (the result id is the run's id) and `get_result` reads that run."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from runtime import get_run
from runtime.django_tasks.compat import (
    InvalidTask,
    TaskResultDoesNotExist,
    TaskResultStatus,
    default_task_backend,
    task,
)
from runtime.models import Run
from tests.support import sample_tasks as tasks
from tests.support.dispatch import Enqueued


def test_tasks_backend_a_workflow_task_is_a_run_of_that_workflow(
    enqueued: Enqueued, drive: Callable[[str], str]
) -> None:
    result = tasks.order_total.enqueue([3, 4, 5], discount=2)
    run = Run.objects.get(id=result.id)
    assert (run.workflow, run.input) == (
        "tests.tasks.order_total",
        {"args": [[3, 4, 5]], "kwargs": {"discount": 2}},
    )
    assert run.priority == 5  # the task's priority 20, in the run's bands
    assert enqueued.calls == [(uuid.UUID(result.id), None)]
    ready = default_task_backend.get_result(result.id)
    assert (ready.status, ready.started_at, ready.worker_ids) == (TaskResultStatus.READY, None, [])

    assert drive(result.id) == "completed"
    done = tasks.order_total.get_result(result.id)
    assert (done.status, done.return_value, done.errors) == (TaskResultStatus.SUCCESSFUL, 10, [])
    assert (done.args, done.kwargs, done.backend) == ([[3, 4, 5]], {"discount": 2}, "default")
    assert (done.task.module_path, done.task.priority) == (
        "tests.support.sample_tasks.order_total",
        20,
    )
    assert done.attempts == 1 and done.worker_ids[0].split(":")[-1].isdigit()
    assert done.enqueued_at <= done.started_at == done.last_attempted_at <= done.finished_at
    assert [s.name for s in get_run(result.id).steps()] == ["subtotal"]


def test_tasks_backend_a_failed_workflow_task_has_the_runs_error(
    drive: Callable[[str], str],
) -> None:
    result = tasks.refuses.enqueue("out of stock")
    assert drive(result.id) == "failed"
    failed = default_task_backend.get_result(result.id)
    assert failed.status == TaskResultStatus.FAILED
    assert [e.exception_class_path for e in failed.errors] == ["runtime.core.errors.FatalError"]
    assert "out of stock" in failed.errors[0].traceback


def test_tasks_backend_a_deferred_workflow_task_starts_after_run_after(
    drive: Callable[[str], str], enqueued: Enqueued
) -> None:
    due = timezone.now() + timedelta(seconds=1)
    result = tasks.order_total.using(run_after=due).enqueue([1, 1])
    ((run_id, countdown),) = enqueued.calls
    assert run_id == uuid.UUID(result.id) and countdown is not None and countdown > 0.5
    assert drive(result.id) == "completed"
    done = default_task_backend.get_result(result.id)
    assert done.return_value == 2 and done.started_at >= due
    assert done.task.run_after == due


def test_tasks_backend_a_workflow_task_enqueued_in_a_rolled_back_transaction_runs_nothing(
    enqueued: Enqueued,
) -> None:
    with pytest.raises(ZeroDivisionError), transaction.atomic():
        result = tasks.order_total.enqueue([1])
        raise ZeroDivisionError
    assert Run.objects.count() == 0 and enqueued.calls == []
    with pytest.raises(TaskResultDoesNotExist):
        default_task_backend.get_result(result.id)


def test_tasks_backend_a_workflow_task_takes_no_task_context_and_is_no_step() -> None:
    from runtime.django_tasks.steps import step_of

    with pytest.raises(InvalidTask, match="DurableContext"):
        task(takes_context=True)(tasks.order_total.func)
    with pytest.raises(TypeError, match="cannot be a step"):
        step_of(tasks.order_total)


def test_tasks_backend_a_plain_run_is_no_task_result() -> None:
    from runtime import start

    plain = start("tests.tasks.order_total", [1])
    with pytest.raises(TaskResultDoesNotExist):
        default_task_backend.get_result(str(plain.id))
