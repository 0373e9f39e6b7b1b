"""WorkerLoop: cancelling a run's bodies by key, and bounding a body with a timeout."""

from __future__ import annotations

import asyncio
import concurrent.futures
import pickle
import threading

import pytest
from conftest import LoopFactory

from runtime.core.errors import FanfoldError, StepTimedOut
from tests.support.waiting import wait_until


def test_worker_loop_cancel_ends_only_that_keys_bodies(new_loop: LoopFactory) -> None:
    loop = new_loop()
    seen: dict[str, list[str]] = {"doomed": [], "spared": []}
    started = threading.Semaphore(0)
    released = threading.Event()

    async def body(run: str) -> str:
        started.release()
        try:
            while not released.is_set():
                await asyncio.sleep(0.002)
        except asyncio.CancelledError:
            seen[run].append("cancelled")
            raise
        return run

    doomed = [loop.submit(lambda: body("doomed"), key="doomed", label="b") for _ in range(5)]
    spared = [loop.submit(lambda: body("spared"), key="spared", label="b") for _ in range(5)]
    for _ in range(10):
        assert started.acquire(timeout=10)

    assert loop.cancel("doomed").result(timeout=10) == 5
    _, pending = concurrent.futures.wait(doomed, timeout=10)
    assert not pending  # waiters are told, as an executor tells them
    assert all(f.cancelled() for f in doomed)
    with pytest.raises(concurrent.futures.CancelledError):
        doomed[0].result()
    assert seen["doomed"] == ["cancelled"] * 5

    released.set()
    assert [f.result(timeout=10) for f in spared] == ["spared"] * 5
    assert seen["spared"] == []


def test_worker_loop_cancel_drops_queued_bodies_of_the_key(new_loop: LoopFactory) -> None:
    loop = new_loop(concurrency=1)
    started = threading.Event()
    ran: list[str] = []

    async def blocker() -> None:
        started.set()
        await asyncio.sleep(30)

    async def queued(name: str) -> str:
        ran.append(name)
        return name

    first = loop.submit(blocker, key="doomed", label="blocker")
    assert started.wait(10)
    waiting = [
        loop.submit(lambda: queued("doomed"), key="doomed", label="q"),
        loop.submit(lambda: queued("spared"), key="spared", label="q"),
    ]
    assert loop.cancel("doomed").result(timeout=10) == 2

    assert waiting[1].result(timeout=10) == "spared"
    assert first.cancelled() and waiting[0].cancelled()
    assert ran == ["spared"]  # the queued body of the cancelled key never started


def test_worker_loop_cancel_of_an_unknown_key_cancels_nothing(new_loop: LoopFactory) -> None:
    loop = new_loop()
    assert loop.cancel("nobody").result(timeout=10) == 0  # not started: nothing to cancel

    async def body() -> int:
        return 1

    assert loop.submit(body, key="run", label="b").result(timeout=10) == 1
    assert loop.cancel("nobody").result(timeout=10) == 0


def test_worker_loop_timeout_cancels_the_body_and_fails_with_step_timed_out(
    new_loop: LoopFactory,
) -> None:
    loop = new_loop()
    seen: list[str] = []

    async def slow() -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    future = loop.submit(slow, key="run", label="fetch_page", timeout=0.05)
    with pytest.raises(StepTimedOut) as info:
        future.result(timeout=10)

    assert seen == ["cancelled"]
    assert (info.value.label, info.value.seconds, info.value.code) == (
        "fetch_page", 0.05, "step_timed_out"
    )  # fmt: skip
    assert "fetch_page" in str(info.value)
    assert isinstance(info.value, FanfoldError)
    assert not isinstance(info.value, TimeoutError)  # never mistaken for the waiter's own


def test_worker_loop_timeout_lets_a_fast_body_through(new_loop: LoopFactory) -> None:
    loop = new_loop()

    async def fast() -> str:
        await asyncio.sleep(0.001)
        return "done"

    assert loop.submit(fast, key="run", label="fast", timeout=30).result(timeout=10) == "done"


def test_worker_loop_timeout_passes_the_bodys_own_timeout_error_through(
    new_loop: LoopFactory,
) -> None:
    loop = new_loop()

    async def own() -> None:
        raise TimeoutError("the HTTP client's own")

    with pytest.raises(TimeoutError, match="the HTTP client's own"):
        loop.submit(own, key="run", label="own", timeout=30).result(timeout=10)


def test_step_timed_out_pickles_with_its_fields() -> None:
    error = StepTimedOut(label="fetch_page", seconds=2.5)
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is StepTimedOut
    assert (copy.label, copy.seconds, str(copy)) == ("fetch_page", 2.5, str(error))


def test_worker_loop_timeout_counts_from_the_start_not_the_queue(new_loop: LoopFactory) -> None:
    loop = new_loop(concurrency=1)

    async def hold() -> None:
        await asyncio.sleep(0.2)

    async def quick() -> str:
        return "ran"

    first = loop.submit(hold, key="run", label="hold")
    second = loop.submit(quick, key="run", label="quick", timeout=0.05)  # queued 0.2 s
    assert second.result(timeout=10) == "ran"
    first.result(timeout=10)
    wait_until(lambda: first.done(), interval=0.002)


def test_worker_loop_a_queued_future_cancelled_by_its_caller_is_done_at_once(
    new_loop: LoopFactory,
) -> None:
    loop = new_loop(concurrency=1)
    started = threading.Event()
    ran: list[str] = []

    async def blocker() -> None:
        started.set()
        await asyncio.sleep(30)

    async def never() -> None:
        ran.append("never")

    first = loop.submit(blocker, key="run", label="blocker")
    assert started.wait(10)
    queued = loop.submit(never, key="run", label="queued")
    assert queued.cancel()

    _, pending = concurrent.futures.wait([queued], timeout=10)
    assert not pending  # its waiters hear now, not when a slot frees
    assert first.cancel()
    _, pending = concurrent.futures.wait([first], timeout=10)
    assert not pending and ran == []
