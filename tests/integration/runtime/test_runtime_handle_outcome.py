"""`get_run(id).result` and `.error`: a finished run's outcome, read-only; before, a clear error."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from runtime import (
    FatalError,
    RunCancelled,
    RunFailed,
    RunNotFinished,
    get_run,
    step,
    workflow,
)
from runtime.executor import Execution, ExecutionOutcome
from runtime.services import start_run


@step(name="tests.handle.refuse")
def refuse(order: str) -> str:
    raise FatalError(f"order {order} is closed")


@workflow(name="tests.handle.done")
def done(ctx: Any, order: str) -> dict[str, str]:
    return {"order": order}


@workflow(name="tests.handle.fails")
def fails(ctx: Any, order: str) -> str:
    return ctx.step(refuse, order)


@workflow(name="tests.handle.naps")
def naps(ctx: Any) -> str:
    ctx.sleep(60)
    return "woke"


def test_handle_result_and_error_of_a_completed_run(run_now: Callable[..., Execution]) -> None:
    run, _ = start_run("tests.handle.done", ["7"])
    assert run_now(run.id).outcome is ExecutionOutcome.COMPLETED
    handle = get_run(run.id)
    assert handle.result == {"order": "7"} == handle.wait(timeout=5)
    assert handle.error is None
    with pytest.raises(AttributeError):
        setattr(handle, "result", "other")  # noqa: B010


def test_handle_result_of_a_failed_run_raises_and_error_is_recorded(
    run_now: Callable[..., Execution],
) -> None:
    run, _ = start_run("tests.handle.fails", ["8"])
    assert run_now(run.id).outcome is ExecutionOutcome.FAILED
    handle = get_run(run.id)
    with pytest.raises(RunFailed, match="order 8 is closed") as failed:
        handle.result  # noqa: B018
    assert handle.error is not None
    assert handle.error["message"] == failed.value.error["message"]
    assert "order 8 is closed" in handle.error["message"]


def test_handle_result_before_the_run_finished_names_wait(
    run_now: Callable[..., Execution],
) -> None:
    run, _ = start_run("tests.handle.naps")
    assert run_now(run.id).outcome is ExecutionOutcome.SUSPENDED
    handle = get_run(run.id)
    for attribute in ("result", "error"):
        with pytest.raises(RunNotFinished, match=r"still waiting.*\.wait\(") as early:
            getattr(handle, attribute)
        assert f".{attribute}" in str(early.value)
    handle.cancel()
    with pytest.raises(RunCancelled):
        handle.result  # noqa: B018
    assert handle.error is None
