"""A message of several task runs' starts, executed in turn on real PostgreSQL: each run as
its own message would run it, a finished run skipped when the batch comes again, and what is
left after RUN_BATCH_SECONDS sent on with its runs' priority."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from runtime.django_tasks.compat import TaskResultStatus
from runtime.models import Run
from runtime.worker.run_batch import execute_batch
from tests.support import sample_tasks as tasks
from tests.support.dispatch import Enqueued


def test_tasks_backend_batch_runs_each_task_once(enqueued: Enqueued) -> None:
    results = [tasks.add.enqueue(i, 10) for i in range(3)]
    run_ids = [uuid.UUID(r.id) for r in results]
    assert execute_batch(run_ids) == "completed:3"
    assert execute_batch(run_ids) == "skipped:3"  # the message again: nothing runs twice
    for i, result in enumerate(results):
        result.refresh()
        assert (result.status, result.return_value, result.attempts) == (
            TaskResultStatus.SUCCESSFUL,
            i + 10,
            1,
        )


def test_tasks_backend_batch_sends_on_what_is_left_after_its_time(
    enqueued: Enqueued, fanfold_settings: Callable[..., Any]
) -> None:
    fanfold_settings(RUN_BATCH_SECONDS=1e-9)  # over after the first run
    results = [tasks.echo.enqueue(i) for i in range(3)]  # priority 50: the run's is 7
    run_ids = [uuid.UUID(r.id) for r in results]
    enqueued.calls.clear()
    enqueued.priorities.clear()
    assert execute_batch(run_ids, priority=7) == "completed:1,sent:2"
    assert [run_id for run_id, _ in enqueued.calls] == run_ids[1:]
    assert enqueued.priorities == [7, 7]
    statuses = []
    for result in results:
        result.refresh()
        statuses.append(result.status)
    assert statuses == [TaskResultStatus.SUCCESSFUL, TaskResultStatus.READY, TaskResultStatus.READY]
    # Their leases, taken with the batch's, were given back: the runs are claimable at once.
    assert not Run.objects.filter(id__in=run_ids[1:], lease_token__isnull=False).exists()
