"""WorkerLoop: bounded concurrency, overlap, outcomes, many submitting threads, contexts."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
import uuid
from typing import Any

import pytest
from conftest import LoopFactory
from eventloop_support import Gauge

from runtime import conf
from runtime.core.current import StepInfo, current_step, running
from runtime.eventloop import WorkerLoop, WorkerLoopClosed, worker_loop
from tests.support.waiting import stays_false, wait_until


def test_worker_loop_runs_at_most_its_concurrency_and_queues_the_rest(
    new_loop: LoopFactory,
) -> None:
    loop = new_loop(concurrency=100)
    gauge, released = Gauge(), threading.Event()

    async def body(i: int) -> int:
        gauge.enter()
        try:
            while not released.is_set():
                await asyncio.sleep(0.002)
            return i
        finally:
            gauge.leave()

    futures = [loop.submit(lambda i=i: body(i), key="run", label="gate") for i in range(101)]
    wait_until(lambda: gauge.started == 100, interval=0.002)
    assert stays_false(lambda: gauge.started > 100, for_seconds=0.05)  # no 101st starts
    assert (gauge.started, gauge.now) == (100, 100)
    released.set()

    assert [f.result(timeout=10) for f in futures] == list(range(101))
    assert gauge.most == 100
    assert gauge.started == 101


def test_worker_loop_starts_queued_bodies_in_submission_order(new_loop: LoopFactory) -> None:
    loop = new_loop(concurrency=1)
    order: list[int] = []

    async def body(i: int) -> None:
        order.append(i)
        await asyncio.sleep(0)

    futures = [loop.submit(lambda i=i: body(i), key="run", label="ordered") for i in range(50)]
    concurrent.futures.wait(futures, timeout=10)
    assert order == list(range(50))


def test_worker_loop_thousand_sleeping_bodies_overlap(new_loop: LoopFactory) -> None:
    loop = new_loop(concurrency=100)
    gauge = Gauge()

    async def body() -> None:
        gauge.enter()
        try:
            await asyncio.sleep(0.1)
        finally:
            gauge.leave()

    started = time.monotonic()
    futures = [loop.submit(body, key=i % 7, label="sleeper") for i in range(1000)]
    done, not_done = concurrent.futures.wait(futures, timeout=60)

    assert not not_done and all(f.exception() is None for f in done)
    assert 10 <= gauge.most <= 100  # overlapped, within the bound
    assert time.monotonic() - started < 60  # in turn they would take 100 s


class BodyError(Exception):
    pass


def test_worker_loop_exceptions_reach_the_future_with_their_type(new_loop: LoopFactory) -> None:
    loop = new_loop()

    async def failing() -> None:
        await asyncio.sleep(0)
        raise BodyError("boom")

    async def exiting() -> None:
        raise SystemExit(3)

    with pytest.raises(BodyError, match="boom"):
        loop.submit(failing, key="run", label="failing").result(timeout=10)
    with pytest.raises(SystemExit):  # belongs to the submitting thread, not the loop's
        loop.submit(exiting, key="run", label="exiting").result(timeout=10)

    async def fine() -> str:
        return "still serving"

    assert loop.submit(fine, key="run", label="fine").result(timeout=10) == "still serving"


def test_worker_loop_accepts_submissions_from_many_threads_at_once(
    new_loop: LoopFactory,
) -> None:
    loop = new_loop(concurrency=10)
    barrier = threading.Barrier(16)

    async def double(n: int) -> int:
        await asyncio.sleep(0.001)
        return 2 * n

    def submitter(thread: int) -> list[int]:
        barrier.wait()
        futures = [
            loop.submit(lambda n=n: double(n), key=thread, label="double")
            for n in range(thread * 100, thread * 100 + 50)
        ]
        return [f.result(timeout=30) for f in futures]

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        results = list(pool.map(submitter, range(16)))

    assert results == [[2 * n for n in range(t * 100, t * 100 + 50)] for t in range(16)]


def test_worker_loop_body_sees_the_submitters_context_variables(new_loop: LoopFactory) -> None:
    loop = new_loop()
    info = StepInfo(run_id=uuid.uuid4(), position=3, name="fetch", attempt=1)

    async def in_child_task() -> StepInfo:
        return current_step()

    async def who_am_i() -> tuple[StepInfo, StepInfo]:
        await asyncio.sleep(0)
        (child,) = await asyncio.gather(in_child_task())  # gather makes it a task of its own
        return current_step(), child

    with running(info):
        future = loop.submit(who_am_i, key=info.run_id, label="fetch")
    assert future.result(timeout=10) == (info, info)


def test_worker_loop_cancelling_the_future_cancels_the_body(new_loop: LoopFactory) -> None:
    loop = new_loop()
    seen: list[str] = []
    started = threading.Event()

    async def body() -> None:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    future = loop.submit(body, key="run", label="long")
    assert started.wait(10)
    assert future.cancel() is True
    wait_until(lambda: seen == ["cancelled"], interval=0.002)


def test_worker_loop_close_cancels_running_bodies_and_refuses_new_ones(
    new_loop: LoopFactory,
) -> None:
    loop = new_loop(concurrency=1)
    started = threading.Event()

    async def body() -> None:
        started.set()
        await asyncio.sleep(30)

    running_future = loop.submit(body, key="run", label="long")
    queued_future = loop.submit(body, key="run", label="queued")
    assert started.wait(10)
    loop.close(timeout=5)

    assert running_future.cancelled() and queued_future.cancelled()
    assert not loop.running
    with pytest.raises(WorkerLoopClosed):
        loop.submit(body, key="run", label="late")
    assert WorkerLoopClosed.code == "worker_loop_closed"


def test_worker_loop_reads_its_limits_from_the_settings(settings: Any) -> None:
    settings.FANFOLD = {"ASYNC_CONCURRENCY": "2", "ASYNC_LAG_WARNING": "0"}
    loop = WorkerLoop()
    gauge, released = Gauge(), threading.Event()

    async def body() -> None:
        gauge.enter()
        try:
            while not released.is_set():
                await asyncio.sleep(0.002)
        finally:
            gauge.leave()

    try:
        futures = [loop.submit(body, key="run", label="gate") for _ in range(3)]
        wait_until(lambda: gauge.started == 2, interval=0.002)
        assert stays_false(lambda: gauge.started > 2, for_seconds=0.05)
        released.set()
        concurrent.futures.wait(futures, timeout=10)
        assert gauge.most == 2
    finally:
        loop.close()
    assert conf.get().ASYNC_CONCURRENCY == 2


def test_worker_loop_process_loop_starts_on_first_submit() -> None:
    loop = worker_loop()
    assert loop is worker_loop()

    async def answer() -> int:
        return 42

    assert loop.submit(answer, key="run", label="answer").result(timeout=10) == 42
    assert loop.running


def _exit_the_loop() -> None:
    raise SystemExit("a loop callback (not a body) exits")


def test_worker_loop_starts_a_new_thread_after_its_thread_died(
    new_loop: LoopFactory, caplog: pytest.LogCaptureFixture
) -> None:
    loop = new_loop()

    async def sabotage() -> str:
        asyncio.get_running_loop().call_soon(_exit_the_loop)
        return "scheduled"

    assert loop.submit(sabotage, key="run", label="sabotage").result(timeout=10) == "scheduled"
    wait_until(lambda: not loop.running, interval=0.002)

    async def answer() -> int:
        return 42

    assert loop.submit(answer, key="run", label="answer").result(timeout=10) == 42
    assert loop.running
    assert any("ended" in r.getMessage() for r in caplog.records if r.name == "fanfold.eventloop")
