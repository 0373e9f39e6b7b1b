"""Django tasks on real `celery -A config worker` processes and PostgreSQL: a task completes
on a prefork worker, survives its worker's SIGKILL (retried, finished once), a batch of
tasks survives the SIGKILL of the pool process running it (each finished once), and a
workflow steps and maps over a task."""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import Sequence
from typing import Any

import pytest
from celery import current_app

from runtime import get_run, start
from runtime.dispatch import EXECUTE_RUNS
from runtime.django_tasks.compat import TaskResultStatus
from runtime.models import Event, EventType, Run
from runtime.testing import use_dispatcher
from tests.acceptance import task_flows as flows
from tests.support.waiting import wait_until
from tests.support.workers import running_worker

pytestmark = pytest.mark.django_db(transaction=True)

WORKER_ENV = {"FANFOLD_WORKFLOW_MODULES": flows.MODULE}


def test_tasks_workers_a_task_completes_on_a_prefork_worker(counters_redis: Any) -> None:
    with running_worker("tasks-a", "prefork", 2, **WORKER_ENV):
        result = flows.square.enqueue(7)
        get_run(result.id).wait(timeout=60)
    result.refresh()
    assert (result.status, result.return_value, result.attempts) == (
        TaskResultStatus.SUCCESSFUL,
        49,
        1,
    )
    assert result.worker_ids[0].split(":")[-1].isdigit()  # host:pid of the worker process
    assert result.enqueued_at <= result.started_at <= result.finished_at


def test_tasks_workers_sigkill_mid_task_retries_and_finishes_once(counters_redis: Any) -> None:
    with running_worker("tasks-doomed", "prefork", 1, **WORKER_ENV) as doomed:
        result = flows.hold_then_finish.enqueue("order-9")
        wait_until(lambda: counters_redis.llen(flows.RUNS) >= 1, 60, message="the task to start")
        # The attempt's start is queued to commit without holding up the body: shortly after.
        wait_until(lambda: _status(result.id) == TaskResultStatus.RUNNING, 10, message="RUNNING")
        doomed.kill()

    with running_worker("tasks-rescue", "prefork", 1, **WORKER_ENV):
        assert get_run(result.id).wait(timeout=90) == {"label": "order-9", "attempt": 2}

    assert [int(a) for a in counters_redis.lrange(flows.RUNS, 0, -1)] == [1, 2]
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.attempts == 2 and len(set(result.worker_ids)) == 2
    # The killed attempt raised nothing: it was taken over, and is listed as lost with its worker.
    [lost] = result.errors
    assert lost.exception_class_path == "runtime.core.errors.WorkerLost"
    assert f"attempt 1 on worker {result.worker_ids[0]}" in lost.traceback


def test_tasks_workers_a_workflow_steps_and_maps_over_a_task(counters_redis: Any) -> None:
    with running_worker("tasks-map", "prefork", 2, **WORKER_ENV):
        handle = start(flows.sum_of_squares, [1, 2, 3, 4])
        assert handle.wait(timeout=60) == 30
    assert sorted(int(x) for x in counters_redis.lrange(flows.SQUARES, 0, -1)) == [1, 2, 3, 4]


def test_tasks_workers_a_named_queue_is_the_celery_queue_its_workers_consume(
    counters_redis: Any, settings: Any
) -> None:
    settings.TASKS = {
        "default": {
            "BACKEND": "runtime.django_tasks.backend.FanfoldBackend",
            "QUEUES": ["default", "fanfold-test-reports"],
        }
    }
    env = {**WORKER_ENV, "DJANGO_TASKS_QUEUES": "default,fanfold-test-reports"}
    with running_worker("tasks-reports", "prefork", 1, queue="fanfold-test-reports", **env):
        result = flows.square.using(queue_name="fanfold-test-reports").enqueue(9)
        assert get_run(result.id).wait(timeout=60) == 81


def test_tasks_workers_a_task_that_is_a_workflow_runs_as_that_workflow(
    counters_redis: Any,
) -> None:
    with running_worker("tasks-workflow", "prefork", 2, **WORKER_ENV):
        result = flows.squares_total.enqueue([2, 3, 4])
        run = get_run(result.id)  # the task's run is a run of the workflow itself
        assert run.wait(timeout=60) == 29
    assert sorted(int(x) for x in counters_redis.lrange(flows.SQUARES, 0, -1)) == [2, 3, 4]
    result.refresh()
    assert (result.status, result.return_value, result.errors) == (
        TaskResultStatus.SUCCESSFUL,
        29,
        [],
    )
    assert result.attempts == 1 and result.worker_ids[0].split(":")[-1].isdigit()
    assert result.enqueued_at <= result.started_at <= result.finished_at
    assert Run.objects.get(id=result.id).workflow == "tests.tasks.squares_total"
    assert len([s for s in run.steps() if s.kind == "step"]) == 3  # the map's branches


def _status(result_id: str) -> str:
    return str(flows.hold_then_finish.get_result(result_id).status)


def _batch_statuses(results: Sequence[Any]) -> list[str]:
    return [str(flows.batch_item.get_result(result.id).status) for result in results]


def test_tasks_workers_sigkill_of_a_child_mid_batch_finishes_every_task_once(
    counters_redis: Any,
) -> None:
    labels = [f"t{n}" for n in range(8)]
    # The runs are committed unsent; their starts then go as one message, as the background
    # publisher combines those it holds at send time (runtime.core.run_batches).
    with use_dispatcher(_Unsent()):
        results = [flows.batch_item.enqueue(label, hold=label == "t3") for label in labels]
    run_ids = [r.id for r in results]
    with running_worker("tasks-batch", "prefork", 1, **WORKER_ENV) as worker:
        current_app.send_task(EXECUTE_RUNS, args=[run_ids], ignore_result=True)
        wait_until(
            lambda: counters_redis.llen(flows.BATCH) >= 4, 60, message="the batch to reach t3"
        )
        # The child's checkpoint writer commits the batch's run ends and an attempt's start
        # without holding up the bodies, milliseconds after them: a kill before that would
        # take them down with it, and those bodies would rightly run again (durable.run_ends).
        committed = [TaskResultStatus.SUCCESSFUL] * 3 + [TaskResultStatus.RUNNING]
        wait_until(
            lambda: _batch_statuses(results[:4]) == committed,
            10,
            message="t0-t2's ends and t3's start to commit",
        )
        (child,) = worker.task_pids()
        os.kill(child, signal.SIGKILL)  # t0-t2 finished, t3 in its body, t4-t7 not started
        # The message comes back (it was not acknowledged), the dead process's t3 is taken
        # over, and a new pool process runs what is left.
        for result in results:
            get_run(result.id).wait(timeout=90)

    executions = [x.decode() for x in counters_redis.lrange(flows.BATCH, 0, -1)]
    assert sorted(executions) == sorted([f"{label}:1" for label in labels] + ["t3:2"])
    assert executions[:4] == ["t0:1", "t1:1", "t2:1", "t3:1"]
    ends = Event.objects.filter(run_id__in=run_ids, type=EventType.RUN_COMPLETED)
    assert sorted(str(run_id) for run_id in ends.values_list("run_id", flat=True)) == sorted(
        run_ids
    )
    for label, result in zip(labels, results, strict=True):
        result.refresh()
        assert (result.status, result.return_value) == (TaskResultStatus.SUCCESSFUL, label)
        assert result.attempts == (2 if label == "t3" else 1)


class _Unsent:
    """A dispatcher that sends nothing: the runs wait for the message the test sends."""

    def enqueue_run(
        self,
        run_id: uuid.UUID,
        countdown: float | None = None,
        priority: int = 0,
        queue: str | None = None,  # one process: no worker node to route to
    ) -> None:
        pass

    def publish_branches(
        self, run_id: uuid.UUID, group_position: int, dispatches: Sequence[Any], priority: int = 0
    ) -> None:
        pass

    def queue_depth(self, queue: str | None = None) -> int | None:
        return 0
