"""Cancelling runs and the recovery sweep, on real PostgreSQL."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from run_records import BodyCalls, event_types, payloads, run_row, steps

from runtime import RunAlreadyFinished, RunCancelled, dispatch, get_run, step, workflow
from runtime.executor import Execution, ExecutionOutcome
from runtime.models import Run
from runtime.recovery.run_sweep import due_runs, overdue_grace, sweep_once
from runtime.services import start_run
from tests.support.dispatch import RecordingDispatcher

calls = BodyCalls()


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    calls.clear()
    yield


@step(name="tests.cancel.record")
def record(label: str) -> str:
    calls.hit(label)
    return label


@workflow(name="tests.cancel.naps")
def naps(ctx: Any) -> str:
    ctx.step(record, "before")
    ctx.sleep(60)
    ctx.step(record, "after")
    return "woke"


def test_cancel_of_a_sleeping_run_cancels_it_and_its_sleep(
    run_now: Callable[..., Execution], clock: Any
) -> None:
    run, _ = start_run("tests.cancel.naps")
    assert run_now(run.id).outcome is ExecutionOutcome.SUSPENDED
    handle = get_run(run.id)

    handle.cancel()

    row = run_row(run.id)
    assert (row.status, row.lease_token, row.wake_at) == ("cancelled", None, None)
    assert row.finished_at is not None
    assert event_types(run.id)[-1] == "run_cancelled"
    assert payloads(run.id, "run_cancelled") == [{"reason": "cancelled"}]
    assert [(s.kind, s.status) for s in steps(run.id)] == [
        ("step", "completed"),
        ("sleep", "cancelled"),
    ]
    with pytest.raises(RunCancelled):
        handle.wait(timeout=0)

    clock.advance(60)  # a late timer message finds nothing to do
    assert run_now(run.id) == Execution(ExecutionOutcome.SKIPPED)
    assert calls.snapshot() == {"before": 1}


def test_cancel_of_a_finished_run_raises_and_changes_nothing(
    run_now: Callable[..., Execution], clock: Any
) -> None:
    run, _ = start_run("tests.cancel.naps")
    run_now(run.id)
    clock.advance(60)
    assert run_now(run.id).outcome is ExecutionOutcome.COMPLETED
    log = event_types(run.id)

    with pytest.raises(RunAlreadyFinished):
        get_run(run.id).cancel()
    assert run_row(run.id).status == "completed"
    assert event_types(run.id) == log


def test_cancel_twice_raises_the_second_time(run_now: Callable[..., Execution]) -> None:
    run, _ = start_run("tests.cancel.naps")
    handle = get_run(run.id)
    handle.cancel()  # still pending: it never started
    with pytest.raises(RunAlreadyFinished):
        handle.cancel()
    assert event_types(run.id).count("run_cancelled") == 1
    assert run_now(run.id) == Execution(ExecutionOutcome.SKIPPED)
    assert calls.snapshot() == {}


def test_sweep_finds_expired_leases_and_overdue_timers_only(enqueued: Any) -> None:
    now = timezone.now()
    hour = timedelta(hours=1)
    states: dict[str, dict[str, Any]] = {
        "orphaned": {
            "status": "running",
            "lease_token": "dead",
            "lease_expires_at": now - timedelta(seconds=5),
        },
        "overdue": {"status": "waiting", "lease_token": None, "wake_at": now - hour},
        "healthy": {
            "status": "running",
            "lease_token": "live",
            "lease_expires_at": now + hour,
            "wake_at": now - hour,
        },
        "sleeping": {"status": "waiting", "lease_token": None, "wake_at": now + hour},
        "finished": {"status": "completed", "lease_token": None, "wake_at": now - hour},
        "just_started": {"status": "pending", "lease_token": None, "wake_at": now},
    }
    ids: dict[str, uuid.UUID] = {}
    for label, columns in states.items():
        run, _ = start_run("tests.cancel.naps")
        Run.objects.filter(id=run.id).update(**columns)
        ids[label] = run.id
    enqueued.calls.clear()

    assert sweep_once() == 2
    assert sorted(run_id for run_id, _ in enqueued.calls) == sorted(
        [ids["orphaned"], ids["overdue"]]
    )
    # The overdue run was sent again just now: it is due anew, given that message's grace;
    # the orphaned one stays due until a worker claims it.
    assert [run_id for run_id, _ in due_runs()] == [ids["orphaned"]]


def test_sweep_waits_longer_for_a_run_whose_message_may_be_queued(enqueued: Any) -> None:
    """With messages waiting in the run queue, a run unpicked for a few seconds is likely
    behind them: the sweep leaves it (a copy would only wait behind the same backlog) until
    it has been due for QUEUED_GRACE_LEASES leases, then sends it once more."""
    now = timezone.now()
    behind, lost = (start_run("tests.cancel.naps")[0].id for _ in range(2))
    Run.objects.filter(id=behind).update(wake_at=now - timedelta(seconds=5))
    lost_for = timedelta(seconds=overdue_grace(depth=1) + 5)
    Run.objects.filter(id=lost).update(wake_at=now - lost_for)
    recorder = dispatch.current()
    assert isinstance(recorder, RecordingDispatcher)
    enqueued.calls.clear()

    recorder.depth = 40
    assert sweep_once() == 1
    assert [run_id for run_id, _ in enqueued.calls] == [lost]
    recorder.depth = 0  # the queue drained and `behind` was not picked up: its message is lost
    assert sweep_once() == 1
    assert [run_id for run_id, _ in enqueued.calls] == [lost, behind]
    assert sweep_once() == 0  # each was sent again once, and is due anew
