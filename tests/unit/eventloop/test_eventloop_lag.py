"""The loop-lag monitor: a body that blocks the loop is named in one warning; others never."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest
from conftest import LoopFactory

from tests.support.waiting import stays_false, wait_until

LOGGER = "fanfold.eventloop"


def _warnings_naming(caplog: pytest.LogCaptureFixture, label: str) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == LOGGER and r.levelno == logging.WARNING and repr(label) in r.getMessage()
    ]


def test_lag_monitor_names_the_body_that_blocked_the_loop(
    new_loop: LoopFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, LOGGER)
    loop = new_loop(lag_warning=0.1)

    async def polite() -> None:
        for _ in range(20):
            await asyncio.sleep(0.005)

    async def blocking_step() -> None:
        await asyncio.sleep(0.01)
        time.sleep(0.3)  # holds the loop: every other body waits

    neighbours = [loop.submit(polite, key="other", label="polite") for _ in range(10)]
    loop.submit(blocking_step, key="run-1", label="blocking_step").result(timeout=10)
    for future in neighbours:
        future.result(timeout=10)
    wait_until(lambda: _warnings_naming(caplog, "blocking_step"), interval=0.005)
    # A few more ticks: the block must be reported once, not again.
    assert stays_false(lambda: len(_warnings_naming(caplog, "blocking_step")) > 1, 0.1)

    named = _warnings_naming(caplog, "blocking_step")
    assert len(named) == 1, named
    assert "run-1" in named[0]
    assert _warnings_naming(caplog, "polite") == []


def test_lag_monitor_names_a_blocking_child_task_by_its_body(
    new_loop: LoopFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, LOGGER)
    loop = new_loop(lag_warning=0.1)

    async def parse() -> None:
        time.sleep(0.3)

    async def fan_in() -> None:
        await asyncio.gather(asyncio.sleep(0.01), parse())  # parse() runs as a child task

    loop.submit(fan_in, key="run-2", label="fan_in").result(timeout=10)
    wait_until(lambda: _warnings_naming(caplog, "fan_in"), interval=0.005)
    assert stays_false(lambda: len(_warnings_naming(caplog, "fan_in")) > 1, 0.1)


def test_lag_monitor_stays_quiet_for_bodies_that_only_await(
    new_loop: LoopFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, LOGGER)
    loop = new_loop(lag_warning=0.1)

    async def awaiting(i: int) -> int:
        for _ in range(5):
            await asyncio.sleep(0.01)
        return i

    futures = [
        loop.submit(lambda i=i: awaiting(i), key="run", label="awaiting") for i in range(200)
    ]
    assert [f.result(timeout=30) for f in futures] == list(range(200))
    assert stays_false(lambda: _warnings_naming(caplog, "awaiting"), for_seconds=0.1)


def test_lag_monitor_off_at_zero_leaves_tasks_unwrapped(new_loop: LoopFactory) -> None:
    loop = new_loop(lag_warning=0.0)

    async def coroutine_type() -> str:
        task = asyncio.current_task()
        return type(task.get_coro()).__name__ if task is not None else "none"

    assert loop.submit(coroutine_type, key="run", label="t").result(timeout=10) == "coroutine"
    timed = new_loop(lag_warning=0.1)
    assert timed.submit(coroutine_type, key="run", label="t").result(timeout=10) == (
        "TimedCoroutine"
    )
