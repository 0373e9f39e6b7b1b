"""FanfoldBackend against what Django documents of a Tasks backend, on real PostgreSQL:
validation, priorities, queues, run_after, async tasks, results and signals, with
DummyBackend's expectations where they overlap."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone

from runtime.django_tasks.backend import FanfoldBackend, run_priority
from runtime.django_tasks.compat import (
    InvalidTask,
    TaskResultDoesNotExist,
    TaskResultStatus,
    default_task_backend,
    task,
    task_backends,
    task_enqueued,
    task_finished,
    task_started,
)
from runtime.models import Run
from tests.support import sample_tasks as tasks
from tests.support.dispatch import Enqueued


@pytest.fixture
def signals() -> Iterator[list[tuple[str, str, Any]]]:
    """(signal, status, result) of every task signal sent while the test runs."""
    seen: list[tuple[str, str, Any]] = []
    receivers = {}
    for name, signal in (
        ("enqueued", task_enqueued),
        ("started", task_started),
        ("finished", task_finished),
    ):

        def receiver(sender: Any, task_result: Any, _name: str = name, **kw: Any) -> None:
            seen.append((_name, str(task_result.status), task_result))

        receivers[name] = receiver
        signal.connect(receiver, weak=False)
    yield seen
    for name, signal in (
        ("enqueued", task_enqueued),
        ("started", task_started),
        ("finished", task_finished),
    ):
        signal.disconnect(receivers[name])


def test_tasks_backend_supports_every_feature() -> None:
    backend = task_backends["default"]
    assert isinstance(backend, FanfoldBackend)
    assert backend.supports_defer and backend.supports_async_task
    assert backend.supports_get_result and backend.supports_priority


def test_tasks_backend_refuses_functions_that_are_not_module_level() -> None:
    def local() -> None: ...

    with pytest.raises(InvalidTask, match="module level"):
        task(local)


def test_tasks_backend_refuses_priorities_out_of_range_and_unknown_queues() -> None:
    with pytest.raises(InvalidTask, match="priority"):
        tasks.add.using(priority=101)
    with pytest.raises(InvalidTask, match="Queue 'elsewhere'"):
        tasks.add.using(queue_name="elsewhere")


def test_tasks_backend_refuses_a_naive_run_after() -> None:
    with pytest.raises(InvalidTask, match="aware"):
        tasks.add.using(run_after=datetime(2030, 1, 1))


def test_tasks_backend_refuses_arguments_that_are_not_json(enqueued: Enqueued) -> None:
    with pytest.raises(TypeError):
        tasks.echo.enqueue(object())
    assert Run.objects.count() == 0 and enqueued.calls == []


def test_tasks_backend_enqueue_returns_a_ready_result_whose_id_is_the_run(
    enqueued: Enqueued, signals: list[Any]
) -> None:
    before = timezone.now()
    result = tasks.add.enqueue(2, b=3)
    assert result.status == TaskResultStatus.READY and not result.is_finished
    assert (result.args, result.kwargs, result.backend) == ([2], {"b": 3}, "default")
    assert result.task.func is tasks.add.func
    assert result.worker_ids == [] and result.errors == [] and result.attempts == 0
    assert result.started_at is None and result.finished_at is None
    assert result.enqueued_at is not None and result.enqueued_at >= before
    with pytest.raises(ValueError, match="not finished"):
        _ = result.return_value
    run = Run.objects.get(id=uuid.UUID(result.id))
    assert enqueued.calls == [(run.id, None)]
    assert [(name, status) for name, status, _ in signals] == [("enqueued", "READY")]
    fetched = default_task_backend.get_result(result.id)
    assert (fetched.id, fetched.status, fetched.args, fetched.kwargs) == (
        result.id,
        TaskResultStatus.READY,
        [2],
        {"b": 3},
    )
    assert fetched.enqueued_at == result.enqueued_at
    assert tasks.add.get_result(result.id).id == result.id


def test_tasks_backend_result_round_trips_every_field_after_the_run(
    drive: Callable[[str], str], signals: list[Any]
) -> None:
    result = tasks.add.enqueue(20, 22)
    assert drive(result.id) == "completed"
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL and result.is_finished
    assert result.return_value == 42
    assert result.attempts == 1 and len(result.worker_ids) == 1 and result.errors == []
    assert result.enqueued_at <= result.started_at == result.last_attempted_at
    assert result.started_at <= result.finished_at
    assert [(name, status) for name, status, _ in signals] == [
        ("enqueued", "READY"),
        ("started", "RUNNING"),
        ("finished", "SUCCESSFUL"),
    ]
    assert signals[-1][2].return_value == 42


def test_tasks_backend_signals_carry_the_task_as_it_was_enqueued(
    drive: Callable[[str], str], signals: list[Any]
) -> None:
    plain = tasks.add.enqueue(1, 2)
    assert drive(plain.id) == "completed"
    assert signals[-1][2].task == tasks.add
    chosen = tasks.add.using(priority=7).enqueue(1, 2)
    assert drive(chosen.id) == "completed"
    ran = signals[-1][2].task
    assert ran.priority == 7 and ran != tasks.add
    assert tasks.add.get_result(chosen.id).task.priority == 7


def test_tasks_backend_failure_records_the_exception_path_and_traceback(
    drive: Callable[[str], str], signals: list[Any]
) -> None:
    result = tasks.always_fails.enqueue()
    assert drive(result.id) == "failed"
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    with pytest.raises(ValueError, match="failed"):
        _ = result.return_value
    [error] = result.errors
    assert error.exception_class_path == "builtins.KeyError"
    assert error.exception_class is KeyError
    assert "raise KeyError" in error.traceback
    assert signals[-1][:2] == ("finished", "FAILED")


def test_tasks_backend_retries_by_the_task_policy(drive: Callable[[str], str]) -> None:
    result = tasks.flaky.enqueue(2)
    assert drive(result.id) == "completed"
    result.refresh()
    assert result.return_value == 3 and result.attempts == 3
    assert [e.exception_class_path for e in result.errors] == ["builtins.ValueError"] * 2
    assert result.started_at < result.last_attempted_at


def test_tasks_backend_context_has_the_attempt_number(drive: Callable[[str], str]) -> None:
    result = tasks.attempt_number.enqueue(True)
    assert drive(result.id) == "completed"
    result.refresh()
    assert result.return_value == 2 and result.attempts == 2


def test_tasks_backend_runs_async_tasks(drive: Callable[[str], str]) -> None:
    result = tasks.async_double.enqueue(21)
    assert drive(result.id) == "completed"
    assert tasks.async_double.get_result(result.id).return_value == 42


def test_tasks_backend_async_enqueue_and_get_result(drive: Callable[[str], str]) -> None:
    result = asyncio.run(tasks.add.aenqueue(1, 2))
    assert drive(result.id) == "completed"
    fetched = asyncio.run(default_task_backend.aget_result(result.id))
    assert fetched.return_value == 3


def test_tasks_backend_priorities_map_to_run_priorities_in_order() -> None:
    assert [run_priority(p) for p in (-100, -1, 0, 1, 50, 100)] == [0, 4, 4, 5, 7, 9]
    result = tasks.echo.enqueue("x")  # priority 50
    assert Run.objects.get(id=uuid.UUID(result.id)).priority == 7
    assert default_task_backend.get_result(result.id).task.priority == 50


def test_tasks_backend_run_after_waits_ready_until_due(drive: Callable[[str], str]) -> None:
    due = timezone.now() + timedelta(seconds=1)
    result = tasks.add.using(run_after=due).enqueue(1, 1)
    from runtime.executor import execute

    execute(uuid.UUID(result.id))  # records the durable timer; the body does not run
    fetched = default_task_backend.get_result(result.id)
    assert fetched.status == TaskResultStatus.READY and fetched.task.run_after == due
    assert drive(result.id) == "completed"
    result.refresh()
    assert result.started_at >= due and result.return_value == 2


def test_tasks_backend_unknown_result_ids_do_not_exist() -> None:
    for result_id in (str(uuid.uuid4()), "not-a-uuid"):
        with pytest.raises(TaskResultDoesNotExist):
            default_task_backend.get_result(result_id)


def test_tasks_backend_a_cancelled_task_has_failed() -> None:
    from runtime import get_run

    result = tasks.add.enqueue(1, 2)
    get_run(result.id).cancel()
    fetched = default_task_backend.get_result(result.id)
    assert fetched.status == TaskResultStatus.FAILED
    assert [e.exception_class_path for e in fetched.errors] == ["runtime.RunCancelled"]


def test_tasks_backend_queue_names_are_the_runs_celery_queues(settings: Any) -> None:
    from runtime import dispatch, start
    from runtime.django_tasks import queues, run_routing

    settings.TASKS = {
        "default": {
            "BACKEND": "runtime.django_tasks.backend.FanfoldBackend",
            "QUEUES": ["default", "reports"],
        }
    }
    on_reports = tasks.add.using(queue_name="reports").enqueue(1, 2)
    on_default = tasks.add.enqueue(3, 4)
    plain = start("examples.noop_loop", 1)
    with queues._lock:
        queues._known.clear()  # as in another process: read from the runs
    routed = dispatch.CeleryDispatcher(route=run_routing())  # as runtime.apps builds it
    assert routed.run_queue(uuid.UUID(on_reports.id)) == "reports"
    assert routed.run_queue(uuid.UUID(on_default.id)) is None
    assert routed.run_queue(plain.id) is None
    assert default_task_backend.get_result(on_reports.id).task.queue_name == "reports"


def test_tasks_backend_options_retry_is_the_default_policy(
    settings: Any, drive: Callable[[str], str]
) -> None:
    settings.TASKS = {
        "default": {
            "BACKEND": "runtime.django_tasks.backend.FanfoldBackend",
            "OPTIONS": {"retry": {"max_attempts": 1}},
        }
    }
    once = tasks.fails_once.enqueue()
    assert drive(once.id) == "failed"
    settings.TASKS = {
        "default": {
            "BACKEND": "runtime.django_tasks.backend.FanfoldBackend",
            "OPTIONS": {"retry": {"max_attempts": 2, "initial_delay": 0.01, "jitter": False}},
        }
    }
    twice = tasks.fails_once.enqueue()
    assert drive(twice.id) == "completed"
    assert default_task_backend.get_result(twice.id).attempts == 2


def _as_if_taken_over(run_id: uuid.UUID, lost_worker: str) -> str:
    """Rewrite a one-attempt task run's history as a takeover leaves it: attempt 1 began on
    `lost_worker` and never reported (the worker was killed), attempt 2 ran the body to its
    end. Returns the worker of attempt 2."""
    from runtime.models import Event, Step

    started = Event.objects.get(run_id=run_id, type="step_started")
    for event in Event.objects.filter(run_id=run_id, seq__gte=started.seq).order_by("-seq"):
        Event.objects.filter(id=event.id).update(seq=event.seq + 1)
        if event.type in ("step_started", "step_completed"):
            Event.objects.filter(id=event.id).update(payload={**event.payload, "attempt": 2})
    lost = {"attempt": 1, "worker": lost_worker}
    Event.objects.create(run_id=run_id, seq=started.seq, type="step_started",
                         step_id=started.step_id, payload=lost,
                         created_at=started.created_at - timedelta(seconds=5))  # fmt: skip
    Step.objects.filter(id=started.step_id).update(attempt=2)
    return str(started.payload["worker"])


def test_tasks_backend_an_attempt_lost_with_its_worker_is_an_error(
    drive: Callable[[str], str],
) -> None:
    result = tasks.add.enqueue(1, 2)
    assert drive(result.id) == "completed"
    rescuer = _as_if_taken_over(uuid.UUID(result.id), "doomed-host:41")
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL and result.return_value == 3
    assert result.attempts == 2 and result.worker_ids == ["doomed-host:41", rescuer]
    [lost] = result.errors  # the second attempt is explained
    assert lost.exception_class_path == "runtime.core.errors.WorkerLost"
    assert lost.exception_class.__name__ == "WorkerLost"
    assert "worker lost: attempt 1 on worker doomed-host:41" in lost.traceback
    assert "attempt 2 took the task over" in lost.traceback


def test_tasks_backend_admin_lists_a_task_by_its_path_with_its_arguments_as_input() -> None:
    from django.test import Client
    from django.urls import reverse

    from tests.support.users import operator

    result = tasks.add.enqueue(20, b=22)
    looker = Client()
    looker.force_login(operator("looker", is_staff=True))
    listed = looker.get(reverse("admin:runtime_run_changelist")).content.decode()
    # The list may break a name after its dots (<wbr>), never inside a word.
    assert "tests.support.sample_tasks.add (task)" in listed.replace("<wbr>", "")
    page = looker.get(reverse("admin:runtime_run_change", args=[result.id])).content.decode()
    inputs = page.split("Input", 1)[1]
    shown = inputs.split("<details>", 1)[0]
    assert "&quot;args&quot;: [\n    20\n  ]" in shown and "&quot;b&quot;: 22" in shown
    assert "fanfold.django_task" not in shown and "enqueued_at" not in shown
    envelope = inputs.split("<details>", 1)[1].split("</details>", 1)[0]
    assert "Task tests.support.sample_tasks.add: its envelope" in envelope
    assert "enqueued_at" in envelope and "backend" in envelope


def test_tasks_backend_api_names_a_task_run_by_its_path_with_its_arguments() -> None:
    from rest_framework.test import APIClient

    from tests.support.users import operator

    result = tasks.add.enqueue(20, b=22)
    client = APIClient()
    client.force_authenticate(operator("reader"))
    run = client.get(f"/api/runs/{result.id}/").json()
    assert (run["workflow"], run["name"]) == (
        "fanfold.django_task",
        "tests.support.sample_tasks.add",
    )
    assert (run["args"], run["kwargs"]) == ([20], {"b": 22})
    assert run["task"]["task"] == "tests.support.sample_tasks.add"
    assert {"backend", "enqueued_at"} <= set(run["task"])
    listed = client.get("/api/runs/", {"include": "input"}).json()["results"]
    [mine] = [r for r in listed if r["id"] == result.id]
    assert (mine["name"], mine["args"], mine["kwargs"]) == (run["name"], [20], {"b": 22})
