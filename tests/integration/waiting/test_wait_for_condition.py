"""`ctx.wait_for_condition` through the executor and the real store, with a FakeClock."""

from __future__ import annotations

from datetime import timedelta

import pytest
from waiting_flows import POLLS, T0, event_types, run_row, start

from runtime.core.clock import FakeClock
from runtime.executor import ExecutionOutcome, execute
from runtime.models import Step

pytestmark = pytest.mark.usefixtures("db_ready")


def poll_until_done(run_id: object, clock: FakeClock, limit: int = 20) -> list[float]:
    """Execute, then move the clock to each wake-up; returns the delays slept."""
    delays: list[float] = []
    for _ in range(limit):
        outcome = execute(run_id, clock=clock)  # type: ignore[arg-type]
        if outcome.outcome is not ExecutionOutcome.SUSPENDED:
            return delays
        assert outcome.wake_at is not None
        delays.append((outcome.wake_at - clock.now()).total_seconds())
        clock.set(outcome.wake_at)
    raise AssertionError("the wait never ended")


def test_wait_for_condition_met_on_fifth_poll_leaves_one_step_record(clock: FakeClock) -> None:
    run_id = start("tests.waiting.until_ready", "fifth", 5)
    assert poll_until_done(run_id, clock) == [10.0, 10.0, 10.0, 10.0]
    assert run_row(run_id).result == {"polls": 5}
    steps = list(Step.objects.filter(run_id=run_id))
    assert [(s.name, s.status, s.attempt) for s in steps] == [
        ("tests.waiting.ready_after", "completed", 5)
    ]
    assert steps[0].started_at == T0  # the wait's first poll
    types = event_types(run_id)
    assert types.count("step_created") == 1
    assert types.count("step_started") == 5
    assert types.count("step_retrying") == 4
    assert POLLS["fifth"] == 5  # replays answered from the record; only polls ran the check


def test_wait_for_condition_delay_grows_by_backoff_up_to_max_interval(clock: FakeClock) -> None:
    run_id = start("tests.waiting.backoff", "grow")
    assert poll_until_done(run_id, clock) == [1.0, 2.0, 3.0, 3.0, 3.0]
    assert run_row(run_id).result == {"polls": 6}


def test_wait_for_condition_times_out_after_a_last_poll_at_the_deadline(clock: FakeClock) -> None:
    run_id = start("tests.waiting.deadline", "late")
    assert poll_until_done(run_id, clock) == [10.0, 10.0, 5.0]
    assert clock.now() == T0 + timedelta(seconds=25)
    result = run_row(run_id).result
    assert "not met within 25.0 s (4 polls)" in result["timed_out"]
    step = Step.objects.get(run_id=run_id)
    assert (step.status, step.attempt, step.error["type"]) == ("failed", 4, "ConditionTimedOut")
    # A replay of the finished wait raises the recorded time-out again, without polling.
    assert POLLS["late"] == 4


def test_wait_for_condition_check_error_fails_at_once_without_retry(clock: FakeClock) -> None:
    run_id = start("tests.waiting.broken", "boom")
    assert poll_until_done(run_id, clock) == []
    assert run_row(run_id).result == {"failed": "RuntimeError"}
    step = Step.objects.get(run_id=run_id)
    assert (step.status, step.attempt) == ("failed", 1)
    assert POLLS["boom"] == 1
    assert "step_retrying" not in event_types(run_id)
