"""Replay on real PostgreSQL: memoized steps, recorded failures, nondeterminism, long loops."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from run_records import BodyCalls, event_types, events, payloads, run_row, step_at, steps

from runtime import FatalError, StepFailed, step, workflow
from runtime.core.clock import FakeClock
from runtime.executor import Execution, ExecutionOutcome
from runtime.models import Step
from runtime.services import start_run
from runtime.warm.cache import warm_runs

calls = BodyCalls()
FLAGS = {"renamed": False}


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    calls.clear()
    FLAGS["renamed"] = False
    yield
    FLAGS["renamed"] = False


def _new_code() -> None:
    """The workflow's code changes as in a new deployment: in new worker processes, which hold
    no run warm (runtime.warm), so the next pass replays the history through the new code."""
    warm_runs().clear()
    FLAGS["renamed"] = True


@step(name="tests.replay.record")
def record(label: str) -> str:
    calls.hit(label)
    return label.upper()


@step(name="tests.replay.refuse")
def refuse(reason: str) -> None:
    calls.hit("refuse")
    raise FatalError(reason)


@workflow(name="tests.replay.steps_sleep_steps")
def steps_sleep_steps(ctx: Any) -> list[str]:
    first = ctx.step(record, "a")
    second = ctx.step(record, "b")
    ctx.sleep(timedelta(seconds=30))
    third = ctx.step(record, "c")
    return [first, second, third]


@workflow(name="tests.replay.catches_failure")
def catches_failure(ctx: Any) -> dict[str, Any]:
    try:
        ctx.step(refuse, "no stock")
    except StepFailed as exc:
        caught = {"step": exc.step, "type": exc.error_type, "message": exc.error_message}
    ctx.sleep(10)
    return caught


@workflow(name="tests.replay.changing")
def changing(ctx: Any, swallow: bool) -> str:
    name = "renamed" if FLAGS["renamed"] else "original"
    try:
        ctx.step(record, name, name=name)
    except Exception:
        if not swallow:
            raise
    ctx.step(record, "after")
    ctx.sleep(10)
    return "done"


def test_replay_does_not_rerun_steps_finished_before_a_sleep(
    run_now: Callable[..., Execution], clock: FakeClock, enqueued: Any
) -> None:
    run, _ = start_run("tests.replay.steps_sleep_steps")

    first = run_now(run.id)
    assert first == Execution(ExecutionOutcome.SUSPENDED, clock.now() + timedelta(seconds=30))
    assert calls.snapshot() == {"a": 1, "b": 1}
    assert run_row(run.id).status == "waiting"
    assert enqueued.calls[-1] == (run.id, 30.0)

    clock.advance(29)
    assert run_now(run.id).outcome is ExecutionOutcome.SUSPENDED  # the timer has not fired yet
    assert calls.snapshot() == {"a": 1, "b": 1}

    clock.advance(1)
    assert run_now(run.id).outcome is ExecutionOutcome.COMPLETED
    assert calls.snapshot() == {"a": 1, "b": 1, "c": 1}
    assert run_row(run.id).result == ["A", "B", "C"]
    assert [(s.position, s.name, s.kind, s.status, s.attempt) for s in steps(run.id)] == [
        (1, "tests.replay.record", "step", "completed", 1),
        (2, "tests.replay.record", "step", "completed", 1),
        (3, "sleep", "sleep", "completed", 1),
        (4, "tests.replay.record", "step", "completed", 1),
    ]


def test_replay_event_log_is_dense_with_a_step_created_for_each_step(
    run_now: Callable[..., Execution], clock: FakeClock
) -> None:
    run, _ = start_run("tests.replay.steps_sleep_steps")
    run_now(run.id)
    clock.advance(30)
    run_now(run.id)

    step_events = ["step_created", "step_started", "step_completed"]
    assert event_types(run.id) == [
        "run_created",
        "run_started",
        *step_events,
        *step_events,
        "step_created",
        "wait_created",
        "wait_completed",
        *step_events,
        "run_completed",
    ]
    created = payloads(run.id, "step_created")
    assert [(p["position"], p["kind"]) for p in created] == [
        (1, "step"),
        (2, "step"),
        (3, "sleep"),
        (4, "step"),
    ]
    by_step = {e.step_id for e in events(run.id) if e.type == "step_created"}
    assert by_step == {s.id for s in steps(run.id)}


def test_replay_of_a_completed_run_is_skipped(
    run_now: Callable[..., Execution], clock: FakeClock
) -> None:
    run, _ = start_run("tests.replay.steps_sleep_steps")
    run_now(run.id)
    clock.advance(30)
    assert run_now(run.id).outcome is ExecutionOutcome.COMPLETED
    log_before = [(e.seq, e.type) for e in events(run.id)]

    assert run_now(run.id) == Execution(ExecutionOutcome.SKIPPED)
    assert calls.snapshot() == {"a": 1, "b": 1, "c": 1}
    assert [(e.seq, e.type) for e in events(run.id)] == log_before


def test_replay_reraises_a_recorded_step_failure_without_running_the_body(
    run_now: Callable[..., Execution], clock: FakeClock
) -> None:
    run, _ = start_run("tests.replay.catches_failure")
    assert run_now(run.id).outcome is ExecutionOutcome.SUSPENDED
    assert calls["refuse"] == 1
    failed = step_at(run.id, 1)
    assert (failed.status, failed.attempt, failed.error["type"]) == ("failed", 1, "FatalError")

    clock.advance(10)
    assert run_now(run.id).outcome is ExecutionOutcome.COMPLETED
    assert calls["refuse"] == 1  # replay raised the recorded failure
    assert run_row(run.id).result == {
        "step": "tests.replay.refuse",
        "type": "FatalError",
        "message": "no stock",
    }
    assert event_types(run.id).count("step_failed") == 1


@pytest.mark.parametrize("swallow", [False, True], ids=["raised", "caught-by-user-code"])
def test_replay_nondeterminism_fails_the_run_with_the_error(
    run_now: Callable[..., Execution], clock: FakeClock, swallow: bool
) -> None:
    run, _ = start_run("tests.replay.changing", [swallow])
    assert run_now(run.id).outcome is ExecutionOutcome.SUSPENDED
    assert calls.snapshot() == {"original": 1, "after": 1}

    _new_code()  # the workflow code changed while the run slept
    assert run_now(run.id).outcome is ExecutionOutcome.FAILED

    assert calls.snapshot() == {"original": 1, "after": 1}
    row = run_row(run.id)
    assert row.status == "failed"
    assert row.error["type"] == "NonDeterminismError"
    assert "position 1" in row.error["message"]
    assert "'renamed'" in row.error["message"] and "'original'" in row.error["message"]
    assert event_types(run.id)[-1] == "run_failed"
    assert step_at(run.id, 1).name == "original"  # the history was not rewritten


def test_replay_nondeterminism_after_the_timer_fired_still_fails_the_run(
    run_now: Callable[..., Execution], clock: FakeClock
) -> None:
    run, _ = start_run("tests.replay.changing", [True])
    run_now(run.id)
    _new_code()
    clock.advance(10)
    assert run_now(run.id).outcome is ExecutionOutcome.FAILED
    assert run_row(run.id).error["type"] == "NonDeterminismError"
    assert calls.snapshot() == {"original": 1, "after": 1}


def test_replay_thousand_step_loop_completes_in_one_run(run_now: Callable[..., Execution]) -> None:
    run, _ = start_run("examples.noop_loop", [1000])
    assert run_now(run.id).outcome is ExecutionOutcome.COMPLETED
    assert run_row(run.id).result == 1000
    assert Step.objects.filter(run_id=run.id).completed().count() == 1000
    assert Step.objects.filter(run_id=run.id).exclude(status="completed").count() == 0
    log = events(run.id)  # dense 1..N
    assert len(log) == 2 + 3 * 1000 + 1
    assert sum(e.type == "step_created" for e in log) == 1000
    assert [s.result for s in steps(run.id)] == list(range(1000))
