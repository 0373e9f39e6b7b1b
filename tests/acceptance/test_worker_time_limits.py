"""Celery's soft time limit on a prefork worker, landing in a run of quick steps.

Most of a no-op step's time is its commit, which the child's main thread writes itself with
the limit's signal handler held (runtime.checkpoint.signals): wherever the limit lands, the
history stays whole, and the worker goes on taking runs.
"""

from __future__ import annotations

from collections import Counter

import pytest

from runtime import start
from runtime.models import FINISHED_RUN_STATES, Event, Run, RunStatus, Step
from tests.support.services import wait_until
from tests.support.workers import running_worker

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_soft_time_limit_mid_run_leaves_a_whole_history_and_a_working_worker() -> None:
    with running_worker("time-limit", "prefork", 1, extra_args=["--soft-time-limit", "1"]) as w:
        long_run = start("examples.noop_loop", 20_000)  # about ten seconds of steps
        wait_until(
            lambda: Run.objects.get(id=long_run.id).status in FINISHED_RUN_STATES,
            120,
            "the long run to end",
        )
        after = start("examples.noop_loop", 10)
        after.wait(timeout=60)
        assert Run.objects.get(id=after.id).status == RunStatus.COMPLETED  # not wedged
        log = w.log_path.read_text(errors="replace")

    assert "Soft time limit (1" in log  # the limit did fire, in the child running the run
    run = Run.objects.get(id=long_run.id)
    if run.status == RunStatus.FAILED:  # it landed in workflow code or after a commit
        assert run.error["type"] == "SoftTimeLimitExceeded"
    else:  # every landing was in a step's body: those attempts retried
        assert run.status == RunStatus.COMPLETED
    events = list(Event.objects.filter(run_id=run.id).order_by("seq").values_list("seq", "type"))
    assert [seq for seq, _ in events] == list(range(1, len(events) + 1))
    completed_rows = set(
        Step.objects.filter(run_id=run.id, status="completed").values_list("id", flat=True)
    )
    completions = Counter(
        Event.objects.filter(run_id=run.id, type="step_completed").values_list("step_id", flat=True)
    )
    assert set(completions) == completed_rows  # every recorded completion has its row, and back
    assert set(completions.values()) == {1}  # and none was recorded twice
    assert len(completed_rows) > 100
