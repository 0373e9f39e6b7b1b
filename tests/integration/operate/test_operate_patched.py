"""`ctx.patched`: old histories take the old branch, new runs the new one, answers are kept."""

from __future__ import annotations

from typing import Any

import operate_workflows as flows
import pytest

from runtime.core.clock import FakeClock
from runtime.executor import ExecutionOutcome, execute
from runtime.models import Event, Step
from runtime.services import start_run
from runtime.testing import InMemoryDispatcher, replay


def _names(run_id: Any) -> list[tuple[str, str]]:
    return list(Step.objects.filter(run_id=run_id).order_by("position").values_list("kind", "name"))


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def _resume(run_id: Any, clock: FakeClock) -> Any:
    clock.advance(0.25)  # past the workflow's 0.2 s sleep
    execution = execute(run_id, clock)
    assert execution.outcome == ExecutionOutcome.COMPLETED
    return Step.objects.filter(run_id=run_id).order_by("position").last()


def test_patched_old_history_takes_the_old_branch_and_a_new_run_the_new_one(
    dispatcher: InMemoryDispatcher, clock: FakeClock
) -> None:
    old, _ = start_run("tests.operate.patched")
    assert execute(old.id, clock).outcome == ExecutionOutcome.SUSPENDED  # asleep on v1 code
    flows.VERSION["code"] = 2
    new, _ = start_run("tests.operate.patched")
    assert execute(new.id, clock).outcome == ExecutionOutcome.SUSPENDED  # asleep on v2 code

    _resume(old.id, clock)
    _resume(new.id, clock)

    assert _names(old.id) == [("step", "a"), ("step", "b"), ("sleep", "sleep"), ("step", "d")]
    assert _names(new.id) == [
        ("step", "a"),
        ("marker", "use-c"),
        ("step", "c"),
        ("sleep", "sleep"),
        ("step", "d"),
    ]
    marker = Event.objects.get(run_id=new.id, type="marker_recorded")
    assert marker.payload == {"patch_id": "use-c", "answer": True}
    assert not Event.objects.filter(run_id=old.id, type="marker_recorded").exists()
    assert replay(old.id).ok and replay(new.id).ok


def test_patched_recorded_answer_is_kept_on_replay(clock: FakeClock) -> None:
    flows.VERSION["code"] = 2
    run, _ = start_run("tests.operate.patched")
    execute(run.id, clock)
    _resume(run.id, clock)
    flows.calls.clear()
    # A replay with the same code reads the marker back and runs nothing.
    report = replay(run.id)
    assert report.ok and report.positions == 5
    assert flows.calls == {}


def test_patched_removed_patch_passes_runs_with_the_marker_and_fails_runs_without(
    clock: FakeClock,
) -> None:
    old, _ = start_run("tests.operate.patched")
    execute(old.id, clock)
    _resume(old.id, clock)
    flows.VERSION["code"] = 2
    new, _ = start_run("tests.operate.patched")
    execute(new.id, clock)
    _resume(new.id, clock)

    flows.VERSION["code"] = 3  # the patch call is gone, only the new branch is left
    assert replay(new.id).ok  # its marker is stepped over
    mismatch = replay(old.id).mismatch
    assert mismatch is not None
    assert (mismatch.position, mismatch.reason) == (2, "name")
