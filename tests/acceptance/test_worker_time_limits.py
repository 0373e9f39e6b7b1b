"""Celery's soft time limit on a prefork worker, landing again and again in a run of quick
steps that lasts several times the limit.

Most of a no-op step's time is its commit, which the child's main thread writes itself with
the limit's signal handler held (runtime.checkpoint.held_signals). The limit bounds a pass, not the
run: each cut pass is followed by a new one that replays what was recorded, and the run
completes with every step recorded once.
"""

from __future__ import annotations

from collections import Counter

import pytest

from runtime import start
from runtime.models import FINISHED_RUN_STATES, Event, Run, RunStatus, Step
from tests.support.waiting import wait_until
from tests.support.workers import running_worker

pytestmark = pytest.mark.django_db(transaction=True)

STEPS = 5_000  # about three seconds of steps: several passes of one second


def test_a_run_longer_than_the_soft_time_limit_completes_over_several_passes() -> None:
    with running_worker("time-limit", "prefork", 1, extra_args=["--soft-time-limit", "1"]) as w:
        handle = start("examples.noop_loop", STEPS)
        wait_until(
            lambda: Run.objects.get(id=handle.id).status in FINISHED_RUN_STATES,
            180,
            message="the run to finish",
        )
        log = w.log_path.read_text(errors="replace")

    assert log.count("Soft time limit (1") >= 2  # cut more than once
    run = Run.objects.get(id=handle.id)
    assert (run.status, run.result) == (RunStatus.COMPLETED, STEPS), run.error
    events = list(Event.objects.filter(run_id=run.id).order_by("seq").values_list("seq", "type"))
    assert [seq for seq, _ in events] == list(range(1, len(events) + 1))
    completions = Counter(
        Event.objects.filter(run_id=run.id, type="step_completed").values_list("step_id", flat=True)
    )
    rows = set(Step.objects.filter(run_id=run.id, status="completed").values_list("id", flat=True))
    assert set(completions) == rows and len(rows) == STEPS
    assert set(completions.values()) == {1}  # no step recorded twice
