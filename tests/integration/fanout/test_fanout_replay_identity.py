"""Replay of a recorded fan-out whose code changed: every branch is checked by name and kind,
and a run whose fan-out no longer matches its history fails without touching that history."""

from __future__ import annotations

from typing import Any

import pytest
from fanout_harness import Branches
from fanout_workflows import RESHAPE, calls, child, flaky, square, statuses

from publisher.fake import FakeTransport
from runtime.executor import ExecutionOutcome, execute
from runtime.models import Run, Step
from runtime.services import start_run
from runtime.warm.cache import warm_runs


def _recorded(n: int, branches: Branches, *, drained: bool = True) -> Any:
    """A `reshaped` run of `n` branches past its first pass (and its branches, if `drained`)."""
    run, _ = start_run("tests.fanout.reshaped", [n])
    assert execute(run.id).outcome is ExecutionOutcome.SUSPENDED
    if drained:
        branches.drain(threads=n)
    return run


def _new_code(what: str, value: Any) -> None:
    """The workflow's code changes as in a new deployment: in new worker processes, which hold
    no run warm (runtime.warm), so the next pass replays the history through the new code."""
    warm_runs().clear()
    RESHAPE[what] = value


def _failed_with(run_id: object) -> str:
    row = Run.objects.get(id=run_id)
    assert row.status == "failed"
    assert row.error["type"] == "NonDeterminismError"
    return str(row.error["message"])


@pytest.mark.parametrize("settled", [False, True], ids=["open", "settled"])
def test_fanout_replay_of_a_map_over_another_step_fails_the_run(
    fake: FakeTransport, branches: Branches, settled: bool
) -> None:
    run = _recorded(4, branches, drained=settled)
    _new_code("fn", flaky)
    assert execute(run.id).outcome is ExecutionOutcome.FAILED
    message = _failed_with(run.id)
    assert "position 1" in message
    assert "'tests.fanout.flaky'" in message and "'tests.fanout.square'" in message
    names = set(Step.objects.filter(run_id=run.id).values_list("name", flat=True))
    assert names == {"tests.fanout.square"}  # the history was not rewritten


def test_fanout_replay_of_a_larger_map_than_recorded_fails_the_run(
    fake: FakeTransport, branches: Branches
) -> None:
    run = _recorded(3, branches)
    _new_code("n", 5)
    assert execute(run.id).outcome is ExecutionOutcome.FAILED
    message = _failed_with(run.id)
    assert "position 4" in message and "smaller fan-out" in message
    assert statuses(run.id) == {"completed": 3}


def test_fanout_replay_checks_each_signature_of_ctx_all_by_kind(
    fake: FakeTransport, branches: Branches
) -> None:
    RESHAPE["all"] = [square.s(2), child.s(3)]
    run, _ = start_run("tests.fanout.reshaped", [0])
    assert execute(run.id).outcome is ExecutionOutcome.SUSPENDED
    _new_code("all", [square.s(2), square.s(3)])  # the second branch is a step now
    assert execute(run.id).outcome is ExecutionOutcome.FAILED
    message = _failed_with(run.id)
    assert "position 2" in message and "child" in message


def test_fanout_replay_of_the_same_map_completes_with_the_recorded_results(
    fake: FakeTransport, branches: Branches
) -> None:
    run = _recorded(6, branches)
    assert execute(run.id).outcome is ExecutionOutcome.COMPLETED
    assert Run.objects.get(id=run.id).result == [n * n for n in range(6)]
    assert sum(calls.counts.values()) == 6
