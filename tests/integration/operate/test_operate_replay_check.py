"""The replay check: recorded histories against changed code, nothing run, nothing written."""

from __future__ import annotations

from typing import Any

import operate_workflows as flows
import pytest

from runtime.core.errors import RunNotFound
from runtime.executor import execute
from runtime.models import Event, Run, Step
from runtime.replay_check import replay_runs
from runtime.services import post_callback, start_run
from runtime.testing import InMemoryDispatcher, callback_token, replay


def _completed(dispatcher: InMemoryDispatcher, workflow: str, *args: Any) -> Run:
    run, _ = start_run(workflow, list(args))
    dispatcher.join()
    run.refresh_from_db()
    assert run.status == "completed"
    return run


def _rows() -> tuple[int, int, list[Any]]:
    return Step.objects.count(), Event.objects.count(), list(Run.objects.values_list("updated_at"))


def test_replay_check_passes_an_unchanged_workflow_and_writes_nothing(
    dispatcher: InMemoryDispatcher,
) -> None:
    run = _completed(dispatcher, "tests.operate.three")
    fanned = _completed(dispatcher, "tests.operate.fanned", ["x", "y"])
    flows.calls.clear()
    before = _rows()
    sent = len(dispatcher.runs), len(dispatcher.branches)

    report = replay(run.id)
    assert (report.ok, report.positions, report.mismatch) == (True, 3, None)
    assert replay(fanned.id).ok
    assert flows.calls == {}  # no step body ran
    assert _rows() == before
    assert (len(dispatcher.runs), len(dispatcher.branches)) == sent


def test_replay_check_passes_runs_in_flight(dispatcher: InMemoryDispatcher) -> None:
    sleeping, _ = start_run("tests.operate.patched")
    execute(sleeping.id)  # asleep at position 3
    waiting, _ = start_run("tests.operate.waits")
    execute(waiting.id)  # waiting for its callback
    pending, _ = start_run("tests.operate.three")  # nothing recorded yet
    flows.calls.clear()
    for run in (sleeping, waiting, pending):
        assert replay(run.id).ok
    assert flows.calls == {}
    token = callback_token(waiting.id)
    assert token is not None
    post_callback(token, result="yes")
    assert replay(waiting.id).ok  # the posted result is answered from the history


def test_replay_check_passes_a_failed_run(dispatcher: InMemoryDispatcher) -> None:
    flows.FAIL.add("b")
    run, _ = start_run("tests.operate.three")
    dispatcher.join()
    run.refresh_from_db()
    assert run.status == "failed"
    assert replay(run.id).ok


@pytest.mark.parametrize(
    ("code", "position", "reason", "seen"),
    [
        (2, 2, "name", "'b2'"),  # a renamed step
        (3, 2, "name", "'c'"),  # a reordered step
        (5, 2, "name", "'c'"),  # a step removed in the middle
        (4, 3, "unreached", "'c'"),  # the last step removed
    ],
    ids=["renamed", "reordered", "removed", "removed-last"],
)
def test_replay_check_reports_the_first_position_the_code_no_longer_matches(
    dispatcher: InMemoryDispatcher, code: int, position: int, reason: str, seen: str
) -> None:
    run = _completed(dispatcher, "tests.operate.three")
    flows.VERSION["code"] = code
    flows.calls.clear()
    report = replay(run.id)
    assert not report.ok and report.mismatch is not None
    assert (report.mismatch.position, report.mismatch.reason) == (position, reason)
    assert seen in report.mismatch.message
    assert flows.calls == {}


def test_replay_check_reports_a_step_the_history_lacks(dispatcher: InMemoryDispatcher) -> None:
    run = _completed(dispatcher, "tests.operate.fanned", ["x"])
    Step.objects.filter(run_id=run.id, position=3).delete()  # a history cut after the fan-out
    report = replay(run.id)
    assert report.mismatch is not None
    assert (report.mismatch.position, report.mismatch.reason) == (3, "history_lacks_step")


def test_replay_check_of_a_larger_fan_out_is_a_mismatch(dispatcher: InMemoryDispatcher) -> None:
    run = _completed(dispatcher, "tests.operate.fanned", ["x", "y"])
    Run.objects.filter(id=run.id).update(input={"args": [["x", "y", "z"]], "kwargs": {}})
    report = replay(run.id)
    assert report.mismatch is not None
    # Its third branch lands where the history recorded the step after the fan-out.
    assert (report.mismatch.position, report.mismatch.reason) == (4, "name")
    assert "'after'" in report.mismatch.message


def test_replay_check_of_an_unknown_workflow_and_an_unknown_run(
    dispatcher: InMemoryDispatcher,
) -> None:
    run = _completed(dispatcher, "tests.operate.three")
    Run.objects.filter(id=run.id).update(workflow="tests.operate.gone")
    report = replay(run.id)
    assert report.mismatch is not None and report.mismatch.reason == "unknown_workflow"
    with pytest.raises(RunNotFound):
        replay("00000000-0000-0000-0000-000000000000")


def test_replay_check_of_many_runs_reports_each(dispatcher: InMemoryDispatcher) -> None:
    runs = [_completed(dispatcher, "tests.operate.three", str(i)) for i in range(5)]
    flows.VERSION["code"] = 2
    reports = list(replay_runs(Run.objects.order_by("created_at"), chunk=2))
    assert [r.run_id for r in reports] == [r.id for r in runs]
    assert all(r.mismatch is not None and r.mismatch.reason == "name" for r in reports)
    assert reports[0].as_dict()["mismatch"]["position"] == 2
