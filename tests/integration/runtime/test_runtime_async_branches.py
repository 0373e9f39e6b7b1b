"""Async fan-out branches on real PostgreSQL, delivered in-process: bodies side by side on the
worker loop, reports group-committed, timeouts retried by policy, a cancelled run's bodies
cancelled, chunks of async branches claimed in one commit."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from runtime import RetryPolicy, StepFailed, step, workflow
from runtime.fanout import async_branches
from runtime.handles import start
from runtime.models import Run, RunStatus, Step
from runtime.services import cancel_run
from runtime.testing import InMemoryDispatcher, use_dispatcher

PEAK = {"now": 0, "max": 0}
SEEN: dict[str, int] = {}
CANCELLED: list[int] = []
LOCK = threading.Lock()


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    PEAK.update(now=0, max=0)
    SEEN.clear()
    CANCELLED.clear()
    yield


@step(name="tests.abranch.wait")
async def wait_io(i: int, seconds: float) -> int:
    with LOCK:
        PEAK["now"] += 1
        PEAK["max"] = max(PEAK["max"], PEAK["now"])
    try:
        await asyncio.sleep(seconds)
    finally:
        with LOCK:
            PEAK["now"] -= 1
    return i * i


@step(
    name="tests.abranch.slow_once",
    timeout=0.2,
    retry=RetryPolicy(max_attempts=2, initial_delay=0.01, jitter=False),
)
async def slow_once(i: int) -> int:
    SEEN[str(i)] = SEEN.get(str(i), 0) + 1
    if SEEN[str(i)] == 1:
        await asyncio.sleep(5)  # cut by the timeout
    return i


@step(name="tests.abranch.hang", retry=RetryPolicy(max_attempts=1))
async def hang(i: int) -> int:
    with LOCK:
        PEAK["now"] += 1
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        CANCELLED.append(i)
        raise
    return i


@workflow(name="tests.abranch.all_waits")
async def all_waits(ctx: Any, n: int, seconds: float) -> int:
    results = await ctx.all([wait_io.s(i, seconds) for i in range(n)])
    return sum(results)


@workflow(name="tests.abranch.sync_all_waits")
def sync_all_waits(ctx: Any, n: int, seconds: float) -> int:
    return sum(ctx.all([wait_io.s(i, seconds) for i in range(n)]))


@workflow(name="tests.abranch.timeouts")
async def timeouts(ctx: Any, n: int) -> list[int]:
    return list(await ctx.map(slow_once, range(n)))


@workflow(name="tests.abranch.hangs")
def hangs(ctx: Any, n: int) -> list[Any]:
    try:
        return ctx.map(hang, range(n))
    except StepFailed:
        return []


def _join(dispatcher: InMemoryDispatcher) -> None:
    dispatcher.join(timeout=60)


def test_async_branches_run_side_by_side_and_fan_in(settings: Any) -> None:
    with use_dispatcher(InMemoryDispatcher()) as dispatcher:
        assert isinstance(dispatcher, InMemoryDispatcher)
        began = time.monotonic()
        run = start("tests.abranch.all_waits", 40, 0.3)
        _join(dispatcher)
        elapsed = time.monotonic() - began
    row = Run.objects.get(id=run.id)
    assert row.status == RunStatus.COMPLETED, row.error
    assert row.result == sum(i * i for i in range(40))
    # One message thread delivers four chunks of ten: the bodies overlapped on the loop.
    assert PEAK["max"] > 10
    assert elapsed < 40 * 0.3  # in turn they would take 12 s
    assert Step.objects.filter(run_id=run.id, status="completed").count() == 40


def test_async_branches_from_a_sync_workflow_fan_in_the_same(settings: Any) -> None:
    with use_dispatcher(InMemoryDispatcher()) as dispatcher:
        assert isinstance(dispatcher, InMemoryDispatcher)
        run = start("tests.abranch.sync_all_waits", 12, 0.05)
        _join(dispatcher)
    assert Run.objects.get(id=run.id).result == sum(i * i for i in range(12))


def test_async_branches_a_timed_out_attempt_fails_and_retries_by_policy() -> None:
    with use_dispatcher(InMemoryDispatcher()) as dispatcher:
        assert isinstance(dispatcher, InMemoryDispatcher)
        run = start("tests.abranch.timeouts", 3)
        _join(dispatcher)
    row = Run.objects.get(id=run.id)
    assert row.status == RunStatus.COMPLETED, row.error
    assert row.result == [0, 1, 2]
    assert SEEN == {"0": 2, "1": 2, "2": 2}
    retried = Step.objects.filter(run_id=run.id).values_list("attempt", flat=True)
    assert sorted(retried) == [2, 2, 2]


def test_async_branches_cancelling_the_run_cancels_bodies_in_flight() -> None:
    with use_dispatcher(InMemoryDispatcher()) as dispatcher:
        assert isinstance(dispatcher, InMemoryDispatcher)
        run = start("tests.abranch.hangs", 5)
        delivering = threading.Thread(target=dispatcher.join, kwargs={"timeout": 60})
        delivering.start()
        deadline = time.monotonic() + 20
        while PEAK["now"] < 5 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert async_branches.running_runs() == [run.id]
        cancel_run(run.id)
        # This call or the process's watcher (a look each second) cancels the bodies.
        assert async_branches.cancel_finished_runs() in (0, 1)
        while async_branches.running_runs() and time.monotonic() < deadline + 10:
            time.sleep(0.01)
        delivering.join(30)
        assert not delivering.is_alive()
    assert sorted(CANCELLED) == [0, 1, 2, 3, 4]
    assert Run.objects.get(id=run.id).status == RunStatus.CANCELLED
    assert async_branches.running_runs() == []
