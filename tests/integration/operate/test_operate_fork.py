"""Fork and retry: copied records are not run again, the rest runs, source and fork linked."""

from __future__ import annotations

from typing import Any

import operate_workflows as flows
import pytest

from runtime import fork, get_run
from runtime.core.callbacks import token_digest
from runtime.core.errors import (
    InvalidArguments,
    NothingToRetry,
    PositionOutOfRange,
    PositionUnfinished,
    RunNotFound,
)
from runtime.executor import execute
from runtime.models import Event, FanoutGroup, Run, Step
from runtime.services import post_callback, start_run
from runtime.testing import InMemoryDispatcher, callback_token


def _finished(dispatcher: InMemoryDispatcher, workflow: str, *args: Any) -> Run:
    run, _ = start_run(workflow, list(args))
    dispatcher.join()
    run.refresh_from_db()
    return run


def _log(run_id: Any) -> list[tuple[int, str]]:
    return list(Event.objects.filter(run_id=run_id).order_by("seq").values_list("seq", "type"))


def test_fork_copies_the_steps_before_the_position_without_running_them(
    dispatcher: InMemoryDispatcher,
) -> None:
    source = _finished(dispatcher, "tests.operate.three")
    source_log = _log(source.id)
    flows.calls.clear()

    handle = fork(source.id, 3)
    assert handle.status == "pending"  # enqueued after commit, not run yet
    assert [r.run_id for r in dispatcher.runs][-1] == handle.id
    dispatcher.join()

    assert handle.wait(timeout=5) == ["A", "B", "C"]
    assert flows.calls == {"c": 1}  # a and b were copied, only c ran again
    new = Run.objects.get(id=handle.id)
    assert (new.forked_from_id, new.forked_from_position) == (source.id, 3)
    assert list(source.forks.values_list("id", flat=True)) == [new.id]
    created = Event.objects.get(run_id=new.id, seq=1)
    assert created.type == "run_created"
    assert created.payload["forked_from"] == str(source.id)
    assert created.payload["position"] == 3
    log = _log(new.id)
    assert [seq for seq, _ in log] == list(range(1, len(log) + 1))  # dense
    assert _log(source.id) == source_log  # the source is never changed
    copied = Step.objects.filter(run_id=new.id, position__lt=3)
    source_ids = set(Step.objects.filter(run_id=source.id).values_list("id", flat=True))
    assert len(copied) == 2 and {s.id for s in copied}.isdisjoint(source_ids)


def test_fork_with_new_arguments_runs_the_rest_with_them(dispatcher: InMemoryDispatcher) -> None:
    source = _finished(dispatcher, "tests.operate.three", "old-")
    flows.calls.clear()
    handle = fork(source.id, 2, args=["new-"])
    dispatcher.join()
    assert handle.wait(timeout=5) == ["OLD-A", "NEW-B", "NEW-C"]
    assert flows.calls == {"new-b": 1, "new-c": 1}
    assert Run.objects.get(id=handle.id).args == ["new-"]
    with pytest.raises(InvalidArguments):
        fork(source.id, 2, args=["x", "too", "many"])


def test_fork_from_inside_a_fan_out_runs_the_whole_fan_out_again(
    dispatcher: InMemoryDispatcher,
) -> None:
    source = _finished(dispatcher, "tests.operate.fanned", ["x", "y", "z"])
    flows.calls.clear()
    handle = fork(source.id, 3)  # the second branch of the fan-out at positions 2-4
    dispatcher.join()
    assert handle.wait(timeout=5)["mapped"] == ["X", "Y", "Z"]
    assert flows.calls == {"x": 1, "y": 1, "z": 1, "after": 1}  # "before" was copied
    new = Run.objects.get(id=handle.id)
    assert new.forked_from_position == 2
    assert Event.objects.get(run_id=new.id, seq=1).payload["requested_position"] == 3


def test_fork_after_a_fan_out_copies_it_whole(dispatcher: InMemoryDispatcher) -> None:
    source = _finished(dispatcher, "tests.operate.fanned", ["x", "y"])
    flows.calls.clear()
    handle = fork(source.id, 4)
    dispatcher.join()
    assert handle.wait(timeout=5) == {"before": "BEFORE", "mapped": ["X", "Y"], "after": "AFTER"}
    assert flows.calls == {"after": 1}
    group = FanoutGroup.objects.get(run_id=handle.id)
    assert (group.first_position, group.total, group.verdict) == (2, 2, "succeeded")


def test_retry_of_a_run_that_failed_in_a_fan_out_branch(dispatcher: InMemoryDispatcher) -> None:
    flows.FAIL.add("y")
    source = _finished(dispatcher, "tests.operate.fanned", ["x", "y", "z"])
    assert source.status == "failed"
    flows.FAIL.clear()  # the bug is fixed
    flows.calls.clear()

    handle = get_run(source.id).retry()
    dispatcher.join()

    assert handle.wait(timeout=5)["mapped"] == ["X", "Y", "Z"]
    assert flows.calls == {"x": 1, "y": 1, "z": 1, "after": 1}
    new = Run.objects.get(id=handle.id)
    assert new.forked_from_position == 2  # the failed branch's whole fan-out
    assert Event.objects.get(run_id=new.id, seq=1).payload["reason"] == "retry"


def test_retry_of_a_sequential_failure_starts_at_the_failed_step(
    dispatcher: InMemoryDispatcher,
) -> None:
    flows.FAIL.add("b")
    source = _finished(dispatcher, "tests.operate.three")
    flows.FAIL.clear()
    flows.calls.clear()
    handle = get_run(source.id).retry()
    dispatcher.join()
    assert handle.wait(timeout=5) == ["A", "B", "C"]
    assert flows.calls == {"b": 1, "c": 1}


def test_fork_of_a_run_in_flight_copies_only_finished_records(
    dispatcher: InMemoryDispatcher,
) -> None:
    source, _ = start_run("tests.operate.waits")
    execute(source.id)  # a done, the callback at 2 open
    with pytest.raises(PositionUnfinished):
        fork(source.id, 3)
    handle = fork(source.id, 2)  # allowed: the open callback is created again
    execute(handle.id)
    tokens = set(Step.objects.filter(kind="callback").values_list("callback_token", flat=True))
    assert len(tokens) == 2
    assert Run.objects.get(id=source.id).status == "waiting"  # untouched


def test_fork_of_a_finished_callback_gets_a_fresh_token(dispatcher: InMemoryDispatcher) -> None:
    source, _ = start_run("tests.operate.waits")
    execute(source.id)
    token = callback_token(source.id)
    assert token is not None
    post_callback(token, result="yes")
    dispatcher.join()
    handle = fork(source.id, 3)
    dispatcher.join()
    assert handle.wait(timeout=5) == "yes"
    copied = Step.objects.get(run_id=handle.id, kind="callback")
    assert copied.callback_token not in (None, token_digest(token))
    assert callback_token(handle.id) != token


@pytest.mark.parametrize("position", [0, -1, 5, "2", True, None])
def test_fork_refuses_a_position_out_of_range(
    dispatcher: InMemoryDispatcher, position: Any
) -> None:
    source = _finished(dispatcher, "tests.operate.three")
    with pytest.raises(PositionOutOfRange):
        fork(source.id, position)
    assert Run.objects.count() == 1


def test_fork_and_retry_refuse_what_they_cannot_do(dispatcher: InMemoryDispatcher) -> None:
    source = _finished(dispatcher, "tests.operate.three")
    with pytest.raises(NothingToRetry):
        get_run(source.id).retry()
    with pytest.raises(RunNotFound):
        fork("00000000-0000-0000-0000-000000000000", 1)
    handle = fork(source.id, 4)  # one past the end: everything copied
    dispatcher.join()
    assert handle.wait(timeout=5) == ["A", "B", "C"]
