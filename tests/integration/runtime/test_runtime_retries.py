"""Retries on real PostgreSQL with an injected clock: attempts, delays, policies, at-most-once."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone
from run_records import BodyCalls, event_types, events, payloads, run_row, step_at

from runtime import FatalError, RetryableError, RetryPolicy, current_step, step, workflow
from runtime.core.clock import FakeClock
from runtime.core.identity import step_id
from runtime.executor import Execution, ExecutionOutcome
from runtime.models import Event, Run, Step
from runtime.services import start_run

calls = BodyCalls()


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    calls.clear()
    yield


@step(
    name="tests.retries.always_fails",
    retry=RetryPolicy(max_attempts=4, initial_delay=2.0, backoff=3.0, max_delay=10.0, jitter=False),
)
def always_fails() -> None:
    calls.hit("always_fails")
    raise ValueError(f"broken on attempt {current_step().attempt}")


@step(name="tests.retries.refuses")
def refuses() -> None:
    calls.hit("refuses")
    raise FatalError("card declined")


@step(
    name="tests.retries.picky",
    retry=RetryPolicy(max_attempts=5, initial_delay=1.0, jitter=False, retry_on=(ConnectionError,)),
)
def picky() -> None:
    calls.hit("picky")
    if current_step().attempt == 1:
        raise ConnectionResetError("reset by peer")
    raise KeyError("missing")


@step(name="tests.retries.busy", retry=RetryPolicy(max_attempts=3, initial_delay=1.0, jitter=False))
def busy() -> str:
    calls.hit("busy")
    if current_step().attempt == 1:
        raise RetryableError("rate limited", retry_after=timedelta(seconds=42))
    return "served"


@step(name="tests.retries.flaky_default")
def flaky_default() -> str:
    calls.hit("flaky_default")
    if current_step().attempt == 1:
        raise RuntimeError("once")
    return "ok"


@step(name="tests.retries.once_no_retry", at_most_once=True, retry=RetryPolicy(max_attempts=1))
def once_no_retry() -> str:
    calls.hit("once_no_retry")
    return "ran"


@step(
    name="tests.retries.once_retry",
    at_most_once=True,
    retry=RetryPolicy(max_attempts=2, initial_delay=5.0, jitter=False),
)
def once_retry() -> str:
    calls.hit("once_retry")
    return f"ran attempt {current_step().attempt}"


@step(name="tests.retries.at_least_once")
def at_least_once() -> str:
    calls.hit("at_least_once")
    return f"ran attempt {current_step().attempt}"


STEPS = {
    fn.name: fn
    for fn in (
        always_fails,
        refuses,
        picky,
        busy,
        flaky_default,
        once_no_retry,
        once_retry,
        at_least_once,
    )
}


@workflow(name="tests.retries.one_step")
def one_step(ctx: Any, step_name: str) -> Any:
    return ctx.step(STEPS[step_name])


def start(step_name: str) -> Run:
    run, _ = start_run("tests.retries.one_step", [step_name])
    return run


def test_retries_count_attempts_and_back_off_with_the_policy_delays(
    run_now: Callable[..., Execution], clock: FakeClock, enqueued: Any
) -> None:
    run = start("tests.retries.always_fails")
    for attempt, delay in [(1, 2.0), (2, 6.0), (3, 10.0)]:  # 2, 2*3, min(10, 2*9)
        now = clock.now()
        assert run_now(run.id) == Execution(
            ExecutionOutcome.SUSPENDED, now + timedelta(seconds=delay)
        )
        assert calls["always_fails"] == attempt
        row = step_at(run.id, 1)
        assert (row.status, row.attempt, row.wake_at) == (
            "pending",
            attempt,
            now + timedelta(seconds=delay),
        )
        assert row.error["message"] == f"broken on attempt {attempt}"
        retrying = payloads(run.id, "step_retrying")[-1]
        assert (retrying["attempt"], retrying["delay"]) == (attempt, delay)
        assert retrying["wake_at"] == (now + timedelta(seconds=delay)).isoformat()
        assert enqueued.calls[-1] == (run.id, delay)
        assert run_row(run.id).status == "waiting"

        clock.advance(delay - 0.5)  # not due yet: the body must not run
        assert run_now(run.id).outcome is ExecutionOutcome.SUSPENDED
        assert calls["always_fails"] == attempt
        clock.advance(0.5)

    assert run_now(run.id).outcome is ExecutionOutcome.FAILED
    assert calls["always_fails"] == 4
    row = step_at(run.id, 1)
    assert (row.status, row.attempt, row.error["type"]) == ("failed", 4, "ValueError")
    assert [p["attempt"] for p in payloads(run.id, "step_started")] == [1, 2, 3, 4]
    assert payloads(run.id, "step_failed")[0]["reason"] == "4 of 4 attempts used"
    error = run_row(run.id).error
    assert (error["type"], error["cause_type"], error["step"]) == (
        "StepFailed",
        "ValueError",
        "tests.retries.always_fails",
    )
    assert event_types(run.id)[-1] == "run_failed"


def test_retries_default_policy_jitters_within_the_first_delay(
    run_now: Callable[..., Execution], clock: FakeClock
) -> None:
    run = start("tests.retries.flaky_default")
    now = clock.now()
    suspended = run_now(run.id)
    delay = payloads(run.id, "step_retrying")[0]["delay"]
    assert 0.0 <= delay <= 1.0  # full jitter on the default 1 s initial delay
    assert suspended.wake_at == now + timedelta(seconds=delay)
    assert step_at(run.id, 1).wake_at == suspended.wake_at

    clock.advance(1.0)
    assert run_now(run.id).outcome is ExecutionOutcome.COMPLETED
    assert run_row(run.id).result == "ok"
    assert step_at(run.id, 1).attempt == 2


def test_retries_fatal_error_fails_the_step_at_once(run_now: Callable[..., Execution]) -> None:
    run = start("tests.retries.refuses")
    assert run_now(run.id).outcome is ExecutionOutcome.FAILED
    assert calls["refuses"] == 1
    row = step_at(run.id, 1)
    assert (row.status, row.attempt, row.error["type"]) == ("failed", 1, "FatalError")
    assert "step_retrying" not in event_types(run.id)
    assert payloads(run.id, "step_failed") == [
        {"attempt": 1, "error": row.error, "reason": "fatal error"}
    ]
    assert run_row(run.id).error["cause_message"] == "card declined"


def test_retries_retry_on_stops_at_an_exception_it_does_not_list(
    run_now: Callable[..., Execution], clock: FakeClock
) -> None:
    run = start("tests.retries.picky")
    assert run_now(run.id).outcome is ExecutionOutcome.SUSPENDED  # ConnectionResetError is listed
    clock.advance(1.0)
    assert run_now(run.id).outcome is ExecutionOutcome.FAILED  # KeyError is not
    assert calls["picky"] == 2
    row = step_at(run.id, 1)
    assert (row.attempt, row.error["type"]) == (2, "KeyError")
    assert payloads(run.id, "step_failed")[0]["reason"] == "KeyError is not in retry_on"


def test_retries_retry_after_sets_the_delay(
    run_now: Callable[..., Execution], clock: FakeClock, enqueued: Any
) -> None:
    run = start("tests.retries.busy")
    now = clock.now()
    assert run_now(run.id) == Execution(ExecutionOutcome.SUSPENDED, now + timedelta(seconds=42))
    assert payloads(run.id, "step_retrying")[0]["delay"] == 42.0
    assert enqueued.calls[-1] == (run.id, 42.0)

    clock.advance(41)
    assert run_now(run.id).outcome is ExecutionOutcome.SUSPENDED
    clock.advance(1)
    assert run_now(run.id).outcome is ExecutionOutcome.COMPLETED
    assert calls["busy"] == 2
    assert run_row(run.id).result == "served"


def simulate_crashed_attempt(run: Run, step_name: str, when: datetime) -> None:
    """What a worker killed inside attempt 1 of the first step leaves behind."""
    sid = step_id(run.id, 1)
    past = timezone.now() - timedelta(minutes=1)
    Run.objects.filter(id=run.id).update(
        status="running",
        started_at=when,
        wake_at=None,
        lease_token="dead-worker",
        lease_expires_at=past,
        last_seq=4,
    )
    Step.objects.create(
        id=sid,
        run=run,
        position=1,
        name=step_name,
        kind="step",
        status="running",
        attempt=1,
        input={"args": [], "kwargs": {}},
        created_at=when,
        started_at=when,
    )
    for seq, event_type, step_ref, payload in [
        (2, "run_started", None, {}),
        (3, "step_created", sid, {"position": 1, "name": step_name, "kind": "step"}),
        (4, "step_started", sid, {"attempt": 1}),
    ]:
        Event.objects.create(
            run=run, seq=seq, type=event_type, step_id=step_ref, payload=payload, created_at=when
        )


def test_retries_interrupted_at_most_once_attempt_fails_without_rerunning(
    run_now: Callable[..., Execution], clock: FakeClock
) -> None:
    run = start("tests.retries.once_no_retry")
    simulate_crashed_attempt(run, "tests.retries.once_no_retry", clock.now())

    assert run_now(run.id).outcome is ExecutionOutcome.FAILED
    assert calls["once_no_retry"] == 0
    row = step_at(run.id, 1)
    assert (row.status, row.attempt, row.error["type"]) == ("failed", 1, "StepInterrupted")
    assert run_row(run.id).error["cause_type"] == "StepInterrupted"
    assert event_types(run.id)[4:] == ["step_failed", "run_failed"]


def test_retries_interrupted_at_most_once_attempt_counts_as_a_failed_attempt(
    run_now: Callable[..., Execution], clock: FakeClock
) -> None:
    run = start("tests.retries.once_retry")
    simulate_crashed_attempt(run, "tests.retries.once_retry", clock.now())

    now = clock.now()
    assert run_now(run.id) == Execution(ExecutionOutcome.SUSPENDED, now + timedelta(seconds=5))
    assert calls["once_retry"] == 0
    row = step_at(run.id, 1)
    assert (row.status, row.attempt, row.error["type"]) == ("pending", 1, "StepInterrupted")
    assert payloads(run.id, "step_retrying")[0]["attempt"] == 1

    clock.advance(5)
    assert run_now(run.id).outcome is ExecutionOutcome.COMPLETED
    assert calls["once_retry"] == 1
    assert run_row(run.id).result == "ran attempt 2"
    assert step_at(run.id, 1).attempt == 2
    events(run.id)  # still dense after the crash and the retry


def test_retries_interrupted_at_least_once_attempt_runs_again(
    run_now: Callable[..., Execution], clock: FakeClock
) -> None:
    run = start("tests.retries.at_least_once")
    simulate_crashed_attempt(run, "tests.retries.at_least_once", clock.now())

    assert run_now(run.id).outcome is ExecutionOutcome.COMPLETED
    assert calls["at_least_once"] == 1
    assert run_row(run.id).result == "ran attempt 2"
    assert [p["attempt"] for p in payloads(run.id, "step_started")] == [1, 2]
