"""Properties of the worker loop under random completion orders, limits and cancellations."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Iterator

import pytest
from eventloop_support import Gauge
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.eventloop import WorkerLoop

DELAYS = st.sampled_from([0.0, 0.0005, 0.001, 0.002, 0.004])


@pytest.fixture(scope="module")
def shared_loop() -> Iterator[WorkerLoop]:
    loop = WorkerLoop(concurrency=16, lag_warning=0.0, name="fanfold-eventloop-properties")
    yield loop
    loop.close()


@settings(max_examples=40, deadline=None)
@given(delays=st.lists(DELAYS, min_size=1, max_size=60))
def test_worker_loop_each_future_gets_its_own_result_whatever_the_order(
    shared_loop: WorkerLoop, delays: list[float]
) -> None:
    async def body(index: int, delay: float) -> tuple[int, float]:
        await asyncio.sleep(delay)
        return index, delay

    futures = [
        shared_loop.submit(lambda i=i, d=d: body(i, d), key=i % 3, label="echo")
        for i, d in enumerate(delays)
    ]
    assert [f.result(timeout=30) for f in futures] == list(enumerate(delays))


@settings(max_examples=15, deadline=None)
@given(limit=st.integers(1, 12), delays=st.lists(DELAYS, min_size=1, max_size=40))
def test_worker_loop_never_runs_more_than_its_limit(limit: int, delays: list[float]) -> None:
    loop = WorkerLoop(concurrency=limit, lag_warning=0.0, name="fanfold-eventloop-limit")
    gauge = Gauge()

    async def body(delay: float) -> None:
        gauge.enter()
        try:
            await asyncio.sleep(delay)
        finally:
            gauge.leave()

    try:
        futures = [loop.submit(lambda d=d: body(d), key="run", label="b") for d in delays]
        done, pending = concurrent.futures.wait(futures, timeout=30)
    finally:
        loop.close()
    assert not pending and all(f.exception() is None for f in done)
    assert 1 <= gauge.most <= limit
    assert gauge.started == len(delays)


@settings(max_examples=25, deadline=None)
@given(
    keys=st.lists(st.sampled_from("abcd"), min_size=1, max_size=30), doomed=st.sampled_from("abcd")
)
def test_worker_loop_cancel_cancels_exactly_the_keys_bodies(
    shared_loop: WorkerLoop, keys: list[str], doomed: str
) -> None:
    async def body(key: str) -> str:
        if key == doomed:
            await asyncio.Event().wait()  # ends only by cancellation
        await asyncio.sleep(0)
        return key

    tag = object()  # keys unique to this example: earlier examples' bodies are not involved
    futures = [shared_loop.submit(lambda k=k: body(k), key=(tag, k), label="b") for k in keys]
    cancelled = shared_loop.cancel((tag, doomed)).result(timeout=10)
    _, pending = concurrent.futures.wait(futures, timeout=30)

    assert not pending  # a cancelled future counts as done for its waiters
    assert cancelled == keys.count(doomed)
    for key, future in zip(keys, futures, strict=True):
        assert future.cancelled() == (key == doomed)
        if key != doomed:
            assert future.result() == key
