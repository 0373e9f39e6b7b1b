"""Callbacks are recorded when they happen, even while the run sleeps (FakeClock, real store)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from waiting_flows import T0, event_types, run_row, start

from runtime.core.clock import FakeClock
from runtime.executor import ExecutionOutcome, execute
from runtime.models import Event, Step
from runtime.services import post_callback
from runtime.testing import callback_token

pytestmark = pytest.mark.usefixtures("db_ready")


def test_callback_timing_timeout_during_sleep_is_recorded_at_its_deadline(
    clock: FakeClock, enqueued: list
) -> None:
    run_id = start("tests.waiting.callback_during_sleep", 1.0, 3.0)
    first = execute(run_id, clock=clock)
    # The sleep ends at +3 s, but the callback's deadline at +1 s wakes the run first.
    assert first.wake_at == T0 + timedelta(seconds=1)
    assert run_row(run_id).wake_at == T0 + timedelta(seconds=1)

    clock.set(T0 + timedelta(seconds=1))
    second = execute(run_id, clock=clock)
    assert (second.outcome, second.wake_at) == (
        ExecutionOutcome.SUSPENDED,
        T0 + timedelta(seconds=3),
    )
    timed_out = Event.objects.get(run_id=run_id, type="callback_timed_out")
    assert timed_out.created_at == T0 + timedelta(seconds=1)
    assert Step.objects.get(run_id=run_id, kind="callback").status == "failed"

    clock.set(T0 + timedelta(seconds=3))
    assert execute(run_id, clock=clock).outcome is ExecutionOutcome.COMPLETED
    assert run_row(run_id).result == {"timed_out": True}
    types = event_types(run_id)
    assert types.index("callback_timed_out") < types.index("wait_completed")
    assert types.count("callback_timed_out") == 1


def test_callback_timing_answer_during_sleep_is_recorded_at_once(
    clock: FakeClock, enqueued: list
) -> None:
    run_id = start("tests.waiting.callback_during_sleep", 60.0, 3.0)
    assert execute(run_id, clock=clock).wake_at == T0 + timedelta(seconds=3)
    token = callback_token(run_id)
    assert token
    enqueued.clear()

    clock.set(T0 + timedelta(seconds=1))
    post_callback(token, result="yes", clock=clock)
    assert enqueued == [(run_id, None)]  # the run is resumed for a pass at once
    received = Event.objects.get(run_id=run_id, type="callback_received")
    assert received.created_at == T0 + timedelta(seconds=1)
    assert execute(run_id, clock=clock).wake_at == T0 + timedelta(seconds=3)  # still asleep

    clock.set(T0 + timedelta(seconds=3))
    assert execute(run_id, clock=clock).outcome is ExecutionOutcome.COMPLETED
    assert run_row(run_id).result == {"answer": "yes"}
    types = event_types(run_id)
    assert types.index("callback_received") < types.index("wait_completed")


def test_callback_timing_answered_callback_does_not_wait(clock: FakeClock) -> None:
    run_id = start("tests.waiting.callback_during_sleep", 60.0, 3.0)
    execute(run_id, clock=clock)
    token = callback_token(run_id)
    assert token
    post_callback(token, result="early", clock=clock)
    clock.set(T0 + timedelta(seconds=3))
    # One pass: the sleep ends and `.wait()` returns the recorded answer without suspending.
    assert execute(run_id, clock=clock).outcome is ExecutionOutcome.COMPLETED
    assert run_row(run_id).result == {"answer": "early"}


def test_callback_timing_heartbeat_lapse_during_sleep_is_recorded_when_it_lapses(
    clock: FakeClock, enqueued: list
) -> None:
    run_id = start("tests.waiting.heartbeat_during_sleep")
    assert execute(run_id, clock=clock).wake_at == T0 + timedelta(seconds=1)
    token = callback_token(run_id)
    assert token
    clock.set(T0 + timedelta(seconds=0.5))
    post_callback(token, heartbeat=True, clock=clock)  # the lapse moves to +1.5 s

    clock.set(T0 + timedelta(seconds=1))
    # Woken for the old deadline: nothing is due yet, so the run parks until the new one.
    assert execute(run_id, clock=clock).wake_at == T0 + timedelta(seconds=1.5)
    assert not Event.objects.filter(run_id=run_id, type="callback_timed_out").exists()

    clock.set(T0 + timedelta(seconds=1.5))
    assert execute(run_id, clock=clock).wake_at == T0 + timedelta(seconds=5)
    timed_out = Event.objects.get(run_id=run_id, type="callback_timed_out")
    assert timed_out.payload["reason"] == "heartbeat_timeout"
    assert timed_out.created_at == T0 + timedelta(seconds=1.5)

    clock.set(T0 + timedelta(seconds=5))
    assert execute(run_id, clock=clock).outcome is ExecutionOutcome.COMPLETED
    assert run_row(run_id).result == {"timed_out": True}
    types = event_types(run_id)
    assert types.index("callback_timed_out") < types.index("wait_completed")
