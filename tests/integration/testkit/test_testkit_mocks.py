"""Step and workflow mocks, and the call log: retries by the step's policy, fan-out branches,
async steps, children, Django tasks."""

from __future__ import annotations

from datetime import timedelta

import pytest
from testkit_flows import (
    async_fetch,
    async_flow,
    charge,
    checkout,
    child,
    fan_out,
    flaky,
    parent,
    retrying,
    square,
)

from runtime import RunFailed
from runtime.handles import get_run
from runtime.testing import WorkflowEnvironment
from tests.support import sample_tasks


def test_testkit_mock_result_is_recorded_in_the_history(env: WorkflowEnvironment) -> None:
    env.mock_step(charge, returns={"id": "ch_1"})
    run = env.start(checkout, "42")
    env.run_until_blocked(run)
    with pytest.raises(LookupError, match="no callback 'approval'"):
        env.post_callback(run, "approval", result="too early")  # it sleeps first
    env.skip(timedelta(days=2))
    env.post_callback(run, "approval", result="ok")
    assert run.wait() == {"charge": {"id": "ch_1"}, "decision": "ok"}
    assert env.calls(charge) == [(("42", 99.0), {})]
    recorded = next(s for s in run.steps() if s.name == "testkit.charge")
    assert recorded.result == {"id": "ch_1"}


def test_testkit_raising_mock_is_retried_by_the_step_policy(env: WorkflowEnvironment) -> None:
    env.mock_step(flaky, raises=ConnectionError("card network down"))
    began = env.now()
    with pytest.raises(RunFailed, match="card network down"):
        env.run(retrying, 5)
    # HOURLY: six attempts an hour apart, then the step fails for good.
    assert env.calls(flaky) == [((5,), {})] * 6
    assert env.now() - began == timedelta(hours=5)


def test_testkit_side_effect_function_sees_the_arguments(env: WorkflowEnvironment) -> None:
    env.mock_step("testkit.flaky", side_effect=lambda n: n * 100)
    assert env.run(retrying, 4) == 400


def test_testkit_calls_sees_fan_out_branches(env: WorkflowEnvironment) -> None:
    assert env.run(fan_out, 4) == [1, 4, 9, 16]
    assert sorted(env.calls(square)) == [((n,), {}) for n in (1, 2, 3, 4)]
    env.mock_step(square, side_effect=lambda n: -n)
    assert env.run(fan_out, 3) == [-1, -2, -3]
    assert len(env.calls(square)) == 7


def test_testkit_async_step_mock(env: WorkflowEnvironment) -> None:
    began = env.now()
    assert env.run(async_flow, "a") == "real a"
    env.mock_step(async_fetch, returns="mocked")
    assert env.run(async_flow, "b") == "mocked"
    assert env.calls(async_fetch) == [(("a",), {}), (("b",), {})]
    assert env.now() - began == timedelta(minutes=2)


def test_testkit_children_run_and_mock_workflow_stands_in(env: WorkflowEnvironment) -> None:
    began = env.now()
    run = env.start(parent, 1)
    waiting = env.run_until_blocked(run)
    assert waiting is not None and waiting.kind == "children"
    assert run.wait() == [2, 12]
    assert env.now() - began == timedelta(days=1)  # the children slept side by side
    env.mock_workflow(child, side_effect=lambda n: n * 1000)
    assert env.run(parent, 2) == [2000, 12000]
    assert env.calls(child) == [((2,), {}), ((12,), {})]
    assert env.now() - began == timedelta(days=1)  # the stand-ins do not sleep


def test_testkit_django_task_as_a_run_and_as_a_mocked_step(env: WorkflowEnvironment) -> None:
    result = sample_tasks.add.enqueue(2, 3)
    assert get_run(result.id).wait() == 5
    env.mock_step(sample_tasks.add, returns=42)
    result = sample_tasks.add.enqueue(1, 1)
    assert get_run(result.id).wait() == 42
    assert env.calls(sample_tasks.add) == [((2, 3), {}), ((1, 1), {})]


def test_testkit_django_task_run_after_waits_on_the_clock(env: WorkflowEnvironment) -> None:
    due = env.now() + timedelta(hours=6)
    result = sample_tasks.add.using(run_after=due).enqueue(20, 22)
    run = get_run(result.id)
    env.skip(timedelta(hours=6) - timedelta(seconds=1))
    assert run.status != "completed"
    assert env.calls(sample_tasks.add) == []
    assert run.wait() == 42
    assert env.now() == due


def test_testkit_a_branch_waiting_for_its_retry_is_children(env: WorkflowEnvironment) -> None:
    env.mock_step(square, side_effect=[RuntimeError("once"), 4, 1])
    run = env.start(fan_out, 2)
    waiting = env.run_until_blocked(run)
    assert waiting is not None and waiting.kind == "children"
    assert sorted(run.wait()) == [1, 4]
    assert len(env.calls(square)) == 3
