"""Celery's soft time limit in a run pass, on real PostgreSQL: a signal whose handler raises,
landing while the main thread commits a step itself (as in a prefork child), and the limit's
exception reaching workflow code. It bounds the pass, not the run."""

from __future__ import annotations

import signal
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence

import pytest
from celery.exceptions import SoftTimeLimitExceeded
from run_records import event_types, step_at

from runtime import step, workflow
from runtime.checkpoint.batching import Checkpoint
from runtime.executor import Execution, ExecutionOutcome
from runtime.models import Run, RunStatus
from runtime.services import start_run
from runtime.testing import use_writer
from tests.support.dispatch import Enqueued
from tests.support.integration import RecordingSink

passes: list[int] = []


@step(name="tests.signals.noop")
def noop(i: int) -> int:
    return i


@workflow(name="tests.signals.three_steps")
def three_steps(ctx: object) -> int:
    return sum(ctx.step(noop, i) for i in range(3))  # type: ignore[attr-defined]


@workflow(name="tests.signals.cut_after_a_step")
def cut_after_a_step(ctx: object) -> int:
    """Its first pass is cut after one new step; every later pass before any new one."""
    passes.append(1)
    first = ctx.step(noop, 1)  # type: ignore[attr-defined]
    if len(passes) <= 2:
        raise SoftTimeLimitExceeded()
    return first + ctx.step(noop, 2)  # type: ignore[attr-defined]


class SignalledSink(RecordingSink):
    """Raises SIGALRM at the start of its commit number `fire_at` (from 0) and notes what the
    handler had done by the end of each."""

    fire_at = 2
    handled: list[int] = []
    seen_at_commit_end: list[list[int]] = []
    written_on: list[str] = []

    def write_batch(self, checkpoints: Sequence[Checkpoint]) -> list[object]:
        SignalledSink.written_on.append(threading.current_thread().name)
        if len(self.committed) == SignalledSink.fire_at:
            signal.raise_signal(signal.SIGALRM)
        receipts = super().write_batch(checkpoints)
        SignalledSink.seen_at_commit_end.append(list(SignalledSink.handled))
        return receipts


@pytest.fixture
def soft_time_limit() -> Iterator[list[int]]:
    def handler(signum: int, frame: object) -> None:
        SignalledSink.handled.append(signum)
        raise SoftTimeLimitExceeded()

    SignalledSink.fire_at = 2
    SignalledSink.handled = []
    SignalledSink.seen_at_commit_end = []
    SignalledSink.written_on = []
    previous = signal.signal(signal.SIGALRM, handler)
    try:
        with use_writer(SignalledSink):
            yield SignalledSink.handled
    finally:
        signal.signal(signal.SIGALRM, previous)


def test_a_limit_landing_in_a_commit_comes_after_it_and_the_run_goes_on(
    soft_time_limit: list[int], run_now: Callable[[uuid.UUID], Execution], enqueued: Enqueued
) -> None:
    run, _ = start_run("tests.signals.three_steps", [])

    cut = run_now(run.id)

    assert SignalledSink.written_on[:3] == [threading.main_thread().name] * 3
    assert SignalledSink.seen_at_commit_end[2] == []  # the handler waited for the commit
    assert soft_time_limit == [signal.SIGALRM]
    assert step_at(run.id, 2).status == "completed"  # the commit it landed in is whole
    assert cut.outcome is ExecutionOutcome.SUSPENDED
    assert Run.objects.get(id=run.id).status == RunStatus.WAITING
    rid, countdown = enqueued.calls[-1]
    assert rid == run.id and countdown is not None and countdown < 1  # a new pass, at once

    assert run_now(run.id).outcome is ExecutionOutcome.COMPLETED
    done = Run.objects.get(id=run.id)
    assert (done.status, done.result) == (RunStatus.COMPLETED, 3)
    assert event_types(run.id).count("step_completed") == 3
    assert "run_failed" not in event_types(run.id)


def test_a_limit_landing_in_the_completing_commit_leaves_the_run_completed(
    soft_time_limit: list[int], run_now: Callable[[uuid.UUID], Execution], enqueued: Enqueued
) -> None:
    SignalledSink.fire_at = 3  # three steps, then run_completed
    run, _ = start_run("tests.signals.three_steps", [])

    run_now(run.id)

    assert soft_time_limit == [signal.SIGALRM]
    done = Run.objects.get(id=run.id)
    assert (done.status, done.result) == (RunStatus.COMPLETED, 3)
    assert event_types(run.id)[-1] == "run_completed"  # no suspend or failure after it
    assert enqueued.count(run.id) == 1  # the start's own, no new pass


def test_a_pass_cut_after_new_steps_continues_and_one_cut_before_any_fails_the_run(
    run_now: Callable[[uuid.UUID], Execution],
) -> None:
    passes.clear()
    run, _ = start_run("tests.signals.cut_after_a_step", [])

    assert run_now(run.id).outcome is ExecutionOutcome.SUSPENDED  # it recorded step 1
    assert run_now(run.id).outcome is ExecutionOutcome.FAILED  # it only replayed step 1

    failed = Run.objects.get(id=run.id)
    assert failed.status == RunStatus.FAILED
    assert failed.error["type"] == "SoftTimeLimitExceeded"
    assert event_types(run.id).count("step_completed") == 1
