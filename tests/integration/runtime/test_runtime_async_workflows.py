"""Async workflows and steps on real PostgreSQL: awaited context calls, gather in call order,
sync and async bodies on either side, replay without running bodies again, refusals."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from run_records import BodyCalls, run_row, steps

from runtime import RetryableError, RetryPolicy, current_step, step, workflow
from runtime.core.clock import FakeClock
from runtime.executor import Execution, ExecutionOutcome
from runtime.models import Run
from runtime.services import post_callback, start_run
from runtime.testing import callback_token

calls = BodyCalls()
DELAYS: dict[str, float] = {}
ATTEMPTS: dict[str, int] = {}


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    calls.clear()
    DELAYS.clear()
    ATTEMPTS.clear()
    yield


@step(name="tests.aio.fetch")
async def fetch(label: str) -> str:
    calls.hit(label)
    await asyncio.sleep(DELAYS.get(label, 0.0))
    return f"page:{label}"


@step(name="tests.aio.summarise")
def summarise(pages: list[str]) -> str:
    calls.hit("summarise")
    return "|".join(pages)


@step(name="tests.aio.whoami")
async def whoami() -> dict[str, Any]:
    info = current_step()
    row = await Run.objects.aget(id=info.run_id)  # Django's async ORM inside an async step
    return {"position": info.position, "workflow": row.workflow}


@step(name="tests.aio.flaky", retry=RetryPolicy(max_attempts=3, initial_delay=5, jitter=False))
async def flaky(label: str) -> str:
    ATTEMPTS[label] = ATTEMPTS.get(label, 0) + 1
    if ATTEMPTS[label] == 1:
        raise RetryableError("not yet")
    return f"ok:{label}"


@step(name="tests.aio.returns_coroutine")
def returns_coroutine() -> Any:
    return fetch.fn("never")


@workflow(name="tests.aio.digest")
async def digest(ctx: Any, labels: list[str]) -> str:
    first = await ctx.step(fetch, labels[0])
    rest = await asyncio.gather(*(ctx.step(fetch, label) for label in labels[1:]))
    await ctx.sleep(timedelta(seconds=5))
    return str(await ctx.step(summarise, [first, *rest]))


@workflow(name="tests.aio.sync_calls_async")
def sync_calls_async(ctx: Any) -> list[Any]:
    return [ctx.step(fetch, "s"), ctx.step(whoami)]


@workflow(name="tests.aio.whoami")
async def whoami_flow(ctx: Any) -> dict[str, Any]:
    await ctx.step(fetch, "w")
    return dict(await ctx.step(whoami))


@workflow(name="tests.aio.forgets_await")
async def forgets_await(ctx: Any) -> str:
    ctx.step(fetch, "forgotten")
    return "done"


@workflow(name="tests.aio.coroutine_result")
async def coroutine_result(ctx: Any) -> Any:
    return await ctx.step(returns_coroutine)


@workflow(name="tests.aio.retry_beside_success")
async def retry_beside_success(ctx: Any) -> list[str]:
    return list(await asyncio.gather(ctx.step(flaky, "f"), ctx.step(fetch, "g")))


@workflow(name="tests.aio.callback")
async def callback_flow(ctx: Any) -> Any:
    cb = ctx.create_callback("approval")
    await ctx.step(fetch, cb.name)
    return await cb.wait()


def _positions(run_id: Any) -> list[tuple[int, str, Any]]:
    return [(s.position, s.kind, s.result) for s in steps(run_id)]


def test_async_workflow_gathers_in_call_order_and_replays_without_bodies(
    run_now: Callable[..., Execution], clock: FakeClock
) -> None:
    DELAYS.update({"b": 0.2, "c": 0.1, "d": 0.0})  # finish in the reverse of call order
    run, _ = start_run("tests.aio.digest", [["a", "b", "c", "d"]])

    assert run_now(run.id).outcome is ExecutionOutcome.SUSPENDED
    assert calls.snapshot() == {"a": 1, "b": 1, "c": 1, "d": 1}
    clock.advance(5)
    assert run_now(run.id).outcome is ExecutionOutcome.COMPLETED

    assert calls.snapshot() == {"a": 1, "b": 1, "c": 1, "d": 1, "summarise": 1}
    assert run_row(run.id).result == "page:a|page:b|page:c|page:d"
    assert _positions(run.id) == [
        (1, "step", "page:a"),
        (2, "step", "page:b"),
        (3, "step", "page:c"),
        (4, "step", "page:d"),
        (5, "sleep", None),
        (6, "step", "page:a|page:b|page:c|page:d"),
    ]


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.sampled_from([0.0, 0.01, 0.03, 0.05]), min_size=2, max_size=5))
def test_async_workflow_gather_positions_follow_calls_whatever_finishes_first(
    run_now: Callable[..., Execution], clock: FakeClock, delays: list[float]
) -> None:
    labels = [f"x{i}" for i in range(len(delays))]
    calls.clear()
    DELAYS.update(dict(zip(labels, delays, strict=True)))
    run, _ = start_run("tests.aio.digest", [labels])
    run_now(run.id)
    clock.advance(5)
    assert run_now(run.id).outcome is ExecutionOutcome.COMPLETED
    recorded = [result for _, kind, result in _positions(run.id) if kind == "step"]
    assert recorded[:-1] == [f"page:{label}" for label in labels]
    assert all(calls.snapshot()[label] == 1 for label in labels)


def test_async_workflow_sync_workflow_runs_async_steps_to_completion(
    run_now: Callable[..., Execution],
) -> None:
    run, _ = start_run("tests.aio.sync_calls_async")
    assert run_now(run.id).outcome is ExecutionOutcome.COMPLETED
    assert run_row(run.id).result == [
        "page:s",
        {"position": 2, "workflow": "tests.aio.sync_calls_async"},
    ]


def test_async_workflow_async_orm_and_current_step_inside_an_async_step(
    run_now: Callable[..., Execution],
) -> None:
    run, _ = start_run("tests.aio.whoami")
    assert run_now(run.id).outcome is ExecutionOutcome.COMPLETED
    assert run_row(run.id).result == {"position": 2, "workflow": "tests.aio.whoami"}


def test_async_workflow_a_call_never_awaited_fails_the_run(
    run_now: Callable[..., Execution],
) -> None:
    run, _ = start_run("tests.aio.forgets_await")
    assert run_now(run.id).outcome is ExecutionOutcome.FAILED
    error = run_row(run.id).error
    assert error["type"] == "NotAwaited"
    assert "ctx.step('tests.aio.fetch')" in error["message"]


def test_async_workflow_an_awaitable_result_is_refused_not_recorded(
    run_now: Callable[..., Execution],
) -> None:
    run, _ = start_run("tests.aio.coroutine_result")
    assert run_now(run.id).outcome is ExecutionOutcome.FAILED
    (row,) = steps(run.id)
    assert row.status == "failed"
    assert row.result is None
    assert "returned an awaitable" in row.error["message"]
    assert "never" not in calls.snapshot()


def test_async_workflow_a_retry_beside_a_success_suspends_and_keeps_the_success(
    run_now: Callable[..., Execution], clock: FakeClock
) -> None:
    run, _ = start_run("tests.aio.retry_beside_success")
    first = run_now(run.id)
    assert first == Execution(ExecutionOutcome.SUSPENDED, clock.now() + timedelta(seconds=5))
    assert [(s.position, s.status) for s in steps(run.id)] == [(1, "pending"), (2, "completed")]
    clock.advance(5)
    assert run_now(run.id).outcome is ExecutionOutcome.COMPLETED
    assert run_row(run.id).result == ["ok:f", "page:g"]
    assert calls.snapshot() == {"g": 1}


def test_async_workflow_awaits_a_callback_posted_while_suspended(
    run_now: Callable[..., Execution],
) -> None:
    run, _ = start_run("tests.aio.callback")
    assert run_now(run.id).outcome is ExecutionOutcome.SUSPENDED
    token = callback_token(run.id)
    post_callback(token, result={"approved": True})
    assert run_now(run.id).outcome is ExecutionOutcome.COMPLETED
    assert run_row(run.id).result == {"approved": True}


def test_async_workflow_generators_are_refused_when_decorated() -> None:
    async def agen() -> Any:
        yield 1

    def gen() -> Any:
        yield 1

    with pytest.raises(TypeError, match="generator"):
        step(name="tests.aio.agen")(agen)
    with pytest.raises(TypeError, match="generator"):
        workflow(name="tests.aio.gen")(gen)
