"""Callbacks end to end through the executor and the checkpoint store (real Postgres)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from callback_flows import T0, run_once, run_row, start, token_of

from runtime.core.clock import FakeClock
from runtime.core.errors import (
    CallbackAlreadyCompleted,
    CallbackNotFound,
    PayloadError,
    PayloadTooLarge,
    RunAlreadyFinished,
)
from runtime.executor import ExecutionOutcome
from runtime.models import Event, Step
from runtime.services import cancel_run, post_callback

pytestmark = pytest.mark.usefixtures("db_ready")


def test_callback_wait_suspends_until_result_posted(clock: FakeClock, enqueued: list) -> None:
    run_id = start("tests.callbacks.approval", "o-1")
    first = run_once(run_id, clock)
    assert first.outcome is ExecutionOutcome.SUSPENDED
    assert first.wake_at == T0 + timedelta(minutes=10)
    assert run_row(run_id).status == "waiting"
    enqueued.clear()

    receipt = post_callback(token_of(run_id), result={"approved": True})

    assert receipt.status == "completed"
    assert enqueued == [(run_id, None)]
    assert run_once(run_id, clock).outcome is ExecutionOutcome.COMPLETED
    assert run_row(run_id).result == {"order": "o-1", "decision": {"approved": True}}
    types = list(Event.objects.filter(run_id=run_id).values_list("type", flat=True))
    assert types.count("callback_created") == 1
    assert types.count("callback_received") == 1


def test_callback_token_is_long_random_and_stable_across_replays(clock: FakeClock) -> None:
    run_id = start("tests.callbacks.approval", "o-2")
    run_once(run_id, clock)
    token = token_of(run_id)
    assert len(token) >= 43  # 32 bytes of urlsafe base64: 256 bits
    other = start("tests.callbacks.approval", "o-3")
    run_once(other, clock)
    assert token_of(other) != token
    run_once(run_id, clock)  # a replay that suspends again keeps the recorded token
    assert token_of(run_id) == token
    handed = Step.objects.get(run_id=run_id, kind="step").result
    assert handed == token[:4]


def test_callback_token_not_in_event_log(clock: FakeClock) -> None:
    run_id = start("tests.callbacks.uncaught")
    run_once(run_id, clock)
    token = token_of(run_id)
    payloads = list(Event.objects.filter(run_id=run_id).values_list("payload", flat=True))
    assert token not in repr(payloads)


def test_callback_posted_error_raises_callback_failed(clock: FakeClock) -> None:
    run_id = start("tests.callbacks.approval", "o-4")
    run_once(run_id, clock)
    post_callback(token_of(run_id), error={"type": "Rejected", "message": "too expensive"})
    assert run_once(run_id, clock).outcome is ExecutionOutcome.COMPLETED
    assert run_row(run_id).result == {
        "order": "o-4",
        "failed": "Rejected",
        "message": "too expensive",
    }
    assert Step.objects.get(run_id=run_id, kind="callback").status == "failed"


def test_callback_uncaught_error_fails_run_with_callback_failed(clock: FakeClock) -> None:
    run_id = start("tests.callbacks.uncaught")
    run_once(run_id, clock)
    post_callback(token_of(run_id), error={"type": "Boom", "message": "no"})
    assert run_once(run_id, clock).outcome is ExecutionOutcome.FAILED
    error = run_row(run_id).error
    assert error["type"] == "CallbackFailed"
    assert "Boom" in error["message"]


def test_callback_null_result_is_a_result(clock: FakeClock) -> None:
    run_id = start("tests.callbacks.uncaught")
    run_once(run_id, clock)
    post_callback(token_of(run_id), result=None)
    assert run_once(run_id, clock).outcome is ExecutionOutcome.COMPLETED
    assert run_row(run_id).result is None


def test_callback_second_result_rejected_and_changes_nothing(clock: FakeClock) -> None:
    run_id = start("tests.callbacks.approval", "o-5")
    run_once(run_id, clock)
    token = token_of(run_id)
    post_callback(token, result="first")
    last_seq = run_row(run_id).last_seq
    with pytest.raises(CallbackAlreadyCompleted):
        post_callback(token, result="second")
    with pytest.raises(CallbackAlreadyCompleted):
        post_callback(token, heartbeat=True)
    assert run_row(run_id).last_seq == last_seq
    assert Step.objects.get(run_id=run_id, kind="callback").result == "first"
    run_once(run_id, clock)
    assert run_row(run_id).result == {"order": "o-5", "decision": "first"}
    with pytest.raises(RunAlreadyFinished):
        post_callback(token, result="third")


def test_callback_timeout_raises_callback_timed_out(clock: FakeClock, enqueued: list) -> None:
    run_id = start("tests.callbacks.approval", "o-6")
    run_once(run_id, clock)
    clock.advance(timedelta(minutes=9))
    assert run_once(run_id, clock).outcome is ExecutionOutcome.SUSPENDED
    clock.advance(timedelta(minutes=1))
    assert run_once(run_id, clock).outcome is ExecutionOutcome.COMPLETED
    assert "timed out" in run_row(run_id).result["timed_out"]
    step = Step.objects.get(run_id=run_id, kind="callback")
    assert step.status == "failed"
    assert step.error["timed_out"] == "timeout"
    assert Event.objects.filter(run_id=run_id, type="callback_timed_out").count() == 1
    with pytest.raises(RunAlreadyFinished):
        post_callback(token_of(run_id), result="late")


def test_callback_late_post_after_timeout_is_rejected(clock: FakeClock) -> None:
    run_id = start("tests.callbacks.heartbeat")
    run_once(run_id, clock)
    token = token_of(run_id)
    clock.advance(31)
    # The heartbeat deadline passed but the run has not noticed yet: the post still wins.
    post_callback(token, result="just in time", clock=clock)
    assert run_once(run_id, clock).outcome is ExecutionOutcome.COMPLETED
    assert run_row(run_id).result == {"done": "just in time"}


def test_callback_heartbeat_extends_heartbeat_deadline(clock: FakeClock) -> None:
    run_id = start("tests.callbacks.heartbeat")
    assert run_once(run_id, clock).wake_at == T0 + timedelta(seconds=30)
    token = token_of(run_id)
    clock.advance(20)
    receipt = post_callback(token, heartbeat=True, clock=clock)
    assert receipt.status == "running"
    assert receipt.deadline == T0 + timedelta(seconds=50)
    clock.advance(20)  # 40 s: past the first heartbeat deadline, within the extended one
    assert run_once(run_id, clock).wake_at == T0 + timedelta(seconds=50)
    clock.advance(11)
    assert run_once(run_id, clock).outcome is ExecutionOutcome.COMPLETED
    result = run_row(run_id).result
    assert "no heartbeat" in result["timed_out"]


def test_callback_heartbeat_never_extends_past_timeout(clock: FakeClock) -> None:
    run_id = start("tests.callbacks.heartbeat")
    run_once(run_id, clock)
    clock.advance(290)
    receipt = post_callback(token_of(run_id), heartbeat=True, clock=clock)
    assert receipt.deadline == T0 + timedelta(seconds=300)


def test_callback_posted_before_wait_is_not_lost(clock: FakeClock) -> None:
    run_id = start("tests.callbacks.sleepy")
    assert run_once(run_id, clock).outcome is ExecutionOutcome.SUSPENDED  # asleep, not yet waiting
    post_callback(token_of(run_id), result="early bird")
    assert run_once(run_id, clock).outcome is ExecutionOutcome.SUSPENDED  # still asleep
    clock.advance(61)
    assert run_once(run_id, clock).outcome is ExecutionOutcome.COMPLETED
    assert run_row(run_id).result == "early bird"


def test_callback_posted_during_execution_replays_instead_of_sleeping(clock: FakeClock) -> None:
    run_id = start("tests.callbacks.self_posting")
    assert run_once(run_id, clock).outcome is ExecutionOutcome.COMPLETED
    assert run_row(run_id).result == {"posted": "inside"}


def test_callback_unknown_token_not_found() -> None:
    with pytest.raises(CallbackNotFound):
        post_callback("nope", result=1)
    with pytest.raises(CallbackNotFound):
        post_callback("x" * 500, result=1)


def test_callback_post_rejects_bad_payloads(clock: FakeClock, settings) -> None:
    run_id = start("tests.callbacks.uncaught")
    run_once(run_id, clock)
    token = token_of(run_id)
    with pytest.raises(PayloadError):
        post_callback(token, result={1, 2})
    with pytest.raises(PayloadError):
        post_callback(token, error={"message": "no type"})
    with pytest.raises(PayloadError):
        post_callback(token)
    with pytest.raises(PayloadError):
        post_callback(token, result=1, heartbeat=True)
    with pytest.raises(PayloadTooLarge):
        post_callback(token, result="x" * (2 * 1024 * 1024))
    assert Step.objects.get(run_id=run_id, kind="callback").status == "running"


def test_callback_cancelled_run_rejects_posts(clock: FakeClock) -> None:
    run_id = start("tests.callbacks.uncaught")
    run_once(run_id, clock)
    cancel_run(run_id)
    assert Step.objects.get(run_id=run_id, kind="callback").status == "cancelled"
    with pytest.raises(RunAlreadyFinished):
        post_callback(token_of(run_id), result=1)
    assert run_once(run_id, clock).outcome is ExecutionOutcome.SKIPPED


def test_callback_result_makes_the_run_due_for_the_sweep(clock: FakeClock, enqueued: list) -> None:
    run_id = start("tests.callbacks.approval", "o-9")
    run_once(run_id, clock)
    enqueued.clear()

    post_callback(token_of(run_id), result={"approved": False})

    # Even if the enqueue after commit is lost, the sweep finds a due, unleased run.
    row = run_row(run_id)
    assert row.lease_token is None
    assert row.wake_at is not None
