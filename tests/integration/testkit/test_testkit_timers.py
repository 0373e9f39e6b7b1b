"""Every durable timer fires on the environment's virtual clock, at its time and not before."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from testkit_flows import (
    checkout,
    condition,
    forever,
    heartbeats,
    ready,
    receiver,
    retrying,
    signalled,
    sleeper,
)

from runtime import RunFailed
from runtime.testing import RunBlocked, WorkflowEnvironment

SECOND = timedelta(seconds=1)


def test_testkit_sleep_fires_at_its_time_and_ctx_now_agrees(env: WorkflowEnvironment) -> None:
    began = env.now()
    run = env.start(sleeper, 3600.0)
    waiting = env.run_until_blocked(run)
    assert waiting is not None and waiting.kind == "sleep"
    assert waiting.until == began + timedelta(hours=1)
    env.skip(timedelta(hours=1) - SECOND)
    assert run.status == "waiting"
    env.skip(SECOND)
    assert run.status == "completed"
    result = run.wait()
    assert datetime.fromisoformat(result["began"]) == began
    assert datetime.fromisoformat(result["ended"]) == began + timedelta(hours=1) == env.now()


def test_testkit_thirty_days_of_sleep_take_no_wall_time(env: WorkflowEnvironment) -> None:
    began = env.now()
    result = env.run(sleeper, 86400.0, 30)
    assert env.now() - began == timedelta(days=30)
    assert datetime.fromisoformat(result["ended"]) == began + timedelta(days=30)


def test_testkit_retry_delay_is_virtual(env: WorkflowEnvironment) -> None:
    env.mock_step("testkit.flaky", side_effect=[RuntimeError("down"), RuntimeError("down"), 7])
    began = env.now()
    run = env.start(retrying, 3)
    waiting = env.run_until_blocked(run)
    assert waiting is not None and waiting.until == began + timedelta(hours=1)
    assert len(env.calls("testkit.flaky")) == 1
    env.skip(timedelta(hours=1) - SECOND)
    assert len(env.calls("testkit.flaky")) == 1  # not before its time
    env.skip(SECOND)
    assert len(env.calls("testkit.flaky")) == 2
    assert run.wait() == 7
    assert env.now() == began + timedelta(hours=2)
    assert env.calls("testkit.flaky") == [((3,), {})] * 3


def test_testkit_callback_times_out_after_seven_days(env: WorkflowEnvironment) -> None:
    env.mock_step("testkit.charge", returns={"id": "ch_1"})
    began = env.now()
    run = env.start(checkout, "42")
    env.skip(timedelta(days=2))
    waiting = run.waiting_on()
    assert waiting is not None
    assert (waiting.kind, waiting.name) == ("callback", "approval")
    assert waiting.until == began + timedelta(days=9)
    env.skip(timedelta(days=7) - SECOND)
    assert run.status == "waiting"
    assert run.wait()["decision"] == "timed out"  # auto-skip: the last second
    assert env.now() == began + timedelta(days=9)


def test_testkit_heartbeat_moves_the_deadline(env: WorkflowEnvironment) -> None:
    began = env.now()
    run = env.start(heartbeats)
    env.run_until_blocked(run)
    env.skip(timedelta(minutes=50))
    assert env.heartbeat(run, "job") == began + timedelta(minutes=110)
    env.skip(timedelta(minutes=59))
    assert run.status == "waiting"
    assert run.wait() == "silent"
    assert env.now() == began + timedelta(minutes=110)


def test_testkit_condition_polls_at_its_interval_until_its_timeout(
    env: WorkflowEnvironment,
) -> None:
    began = env.now()
    run = env.start(condition)
    waiting = env.run_until_blocked(run)
    assert waiting is not None and waiting.kind == "condition"
    assert waiting.until == began + timedelta(minutes=10)
    assert len(env.calls(ready)) == 1
    env.skip(timedelta(minutes=10) - SECOND)
    assert len(env.calls(ready)) == 1
    env.skip(SECOND)
    assert len(env.calls(ready)) == 2
    assert run.wait() == "gave up"
    assert env.now() - began == timedelta(hours=1)


def test_testkit_recv_and_signal_time_out_on_the_clock(env: WorkflowEnvironment) -> None:
    began = env.now()
    message, signal = env.start(receiver), env.start(signalled)
    env.run_until_blocked(message)
    env.run_until_blocked(signal)
    assert (message.waiting_on().kind, message.waiting_on().name) == ("message", "orders")
    assert (signal.waiting_on().kind, signal.waiting_on().name) == ("signal", "paid")
    env.skip(timedelta(hours=3) - SECOND)
    assert message.status == signal.status == "waiting"
    assert message.wait() == {"message": None}
    assert env.now() == began + timedelta(hours=3)
    assert signal.status == "waiting"
    assert signal.wait() == {"signal": None}
    assert env.now() == began + timedelta(hours=5)


def test_testkit_debounced_start_waits_for_its_window(env: WorkflowEnvironment) -> None:
    began = env.now()
    first = env.start(sleeper, 0.0, debounce=600, debounce_key="k")
    again = env.start(sleeper, 0.0, debounce=600, debounce_key="k")
    assert again.id == first.id
    env.settle()
    assert first.status == "pending"
    env.skip(timedelta(minutes=10) - SECOND)
    assert first.status == "pending"
    result = first.wait()
    assert datetime.fromisoformat(result["began"]) >= began + timedelta(minutes=10)


def test_testkit_auto_skip_takes_the_earliest_timer_across_runs(env: WorkflowEnvironment) -> None:
    began = env.now()
    three, one, two = (env.start(sleeper, days * 86400.0) for days in (3, 1, 2))
    result = two.wait()
    assert datetime.fromisoformat(result["ended"]) == began + timedelta(days=2) == env.now()
    assert one.status == "completed"
    assert datetime.fromisoformat(one.wait()["ended"]) == began + timedelta(days=1)
    assert three.status == "waiting"
    assert three.waiting_on().until == began + timedelta(days=3)


def test_testkit_a_run_blocked_on_a_callback_reports_it(env: WorkflowEnvironment) -> None:
    run = env.start(heartbeats)
    env.run_until_blocked(run)
    env.heartbeat(run, "job")
    waiting = run.waiting_on()
    assert waiting is not None and (waiting.kind, waiting.name) == ("callback", "job")
    env.post_callback(run, "job", result="done")
    assert run.wait() == "done"
    assert run.waiting_on() is None


def test_testkit_waiting_with_no_timer_raises_run_blocked(env: WorkflowEnvironment) -> None:
    began = env.now()
    run = env.start(forever)
    with pytest.raises(RunBlocked, match="callback 'never'"):
        run.wait()
    assert env.now() == began  # no timer: the clock stays
    waiting = run.waiting_on()
    assert waiting is not None and (waiting.kind, waiting.name, waiting.until) == (
        "callback",
        "never",
        None,
    )
    env.post_callback(run, "never", error={"type": "Refused", "message": "no"})
    with pytest.raises(RunFailed, match="Refused"):
        run.wait()


def test_testkit_message_and_signal_are_delivered(env: WorkflowEnvironment) -> None:
    run = env.start(receiver)
    env.run_until_blocked(run)
    env.send(run, "orders", {"sku": "A1"})
    assert run.wait() == {"message": {"sku": "A1"}}
    run = env.start(signalled)
    env.run_until_blocked(run)
    env.emit_signal("paid", {"order": 42})
    assert run.wait() == {"signal": {"order": 42}}
