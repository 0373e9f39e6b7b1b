"""run_to_completion: a coroutine run to its end from sync code, refused inside a loop."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading
import uuid

import pytest
from conftest import LoopFactory
from runtime.stepinfo import StepInfo, current_step, running

from runtime.core.errors import StepTimedOut
from runtime.eventloop import InsideEventLoop, run_to_completion

marker: contextvars.ContextVar[str] = contextvars.ContextVar("marker", default="unset")


async def _add(a: int, b: int) -> int:
    await asyncio.sleep(0.001)
    return a + b


def test_run_to_completion_returns_the_result_in_a_plain_thread() -> None:
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda n: run_to_completion(_add(n, 1)), range(8)))
    assert results == [n + 1 for n in range(8)]
    assert run_to_completion(_add(2, 3)) == 5  # and in the test's own thread


class StepError(Exception):
    pass


def test_run_to_completion_raises_the_coroutines_exception() -> None:
    async def failing() -> None:
        await asyncio.sleep(0)
        raise StepError("nope")

    with pytest.raises(StepError, match="nope"):
        run_to_completion(failing())


def test_run_to_completion_is_refused_inside_a_running_loop() -> None:
    async def caller() -> None:
        pending = _add(1, 1)
        with pytest.raises(InsideEventLoop, match="await the coroutine instead"):
            run_to_completion(pending, label="fetch_page")
        assert pending.cr_frame is None  # closed, never run: no "never awaited" warning

    asyncio.run(caller())
    assert InsideEventLoop.code == "inside_event_loop"


def test_run_to_completion_is_refused_on_the_worker_loop(new_loop: LoopFactory) -> None:
    loop = new_loop()

    async def body() -> int:
        return run_to_completion(_add(1, 1))

    with pytest.raises(InsideEventLoop):
        loop.submit(body, key="run", label="nested").result(timeout=10)


def test_run_to_completion_sees_the_callers_context_variables() -> None:
    info = StepInfo(run_id=uuid.uuid4(), position=7, name="fetch_page", attempt=2)

    async def inside() -> tuple[StepInfo, str]:
        seen = current_step(), marker.get()
        marker.set("changed inside")
        return seen

    token = marker.set("set by the caller")
    try:
        with running(info):
            assert run_to_completion(inside()) == (info, "set by the caller")
        assert marker.get() == "set by the caller"  # the coroutine's change stays inside
    finally:
        marker.reset(token)


def test_run_to_completion_bounds_the_coroutine_with_a_timeout() -> None:
    cancelled = threading.Event()

    async def slow() -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    with pytest.raises(StepTimedOut, match="fetch_page"):
        run_to_completion(slow(), timeout=0.05, label="fetch_page")
    assert cancelled.is_set()
