"""Workflows for the async acceptance tests.

Imported by the test process (as `tests.acceptance.async_flows`) and, through
FANFOLD_WORKFLOW_MODULES, by the worker processes. Bodies record what they did in Redis lists
and counters on the counters database, which the test flushes, so they can be counted across
worker processes.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from runtime import RetryPolicy, StepFailed, current_step, step, workflow
from runtime.models import Run
from tests.support.services import counters_redis_client

MODULE = __name__
BODIES = "tests:async:bodies"
IN_FLIGHT = "tests:async:in_flight"
PEAK = "tests:async:peak"
CANCELLED = "tests:async:cancelled"
TIMED_OUT = "tests:async:timed_out"


def client() -> Any:
    return counters_redis_client()


@step(name="tests.async_acc.wait")
async def wait_io(i: int, seconds: float) -> int:
    redis = client()
    now = redis.incr(IN_FLIGHT)
    redis.eval("if tonumber(ARGV[1]) > tonumber(redis.call('get', KEYS[1]) or '0') then "
               "redis.call('set', KEYS[1], ARGV[1]) end", 1, PEAK, now)  # fmt: skip
    try:
        await asyncio.sleep(seconds)
    finally:
        redis.decr(IN_FLIGHT)
    redis.rpush(BODIES, i)
    return i * i


@step(name="tests.async_acc.sync_square")
def sync_square(i: int) -> dict[str, Any]:
    return {"square": i * i, "pid": os.getpid()}


@step(name="tests.async_acc.hang", retry=RetryPolicy(max_attempts=1))
async def hang(i: int) -> int:
    client().rpush(BODIES, i)
    try:
        await asyncio.sleep(120)
    except asyncio.CancelledError:
        client().rpush(CANCELLED, i)
        raise
    return i


@step(
    name="tests.async_acc.slow_first",
    timeout=0.5,
    retry=RetryPolicy(max_attempts=3, initial_delay=0.1, jitter=False),
)
async def slow_first(i: int) -> int:
    if current_step().attempt == 1:
        client().rpush(TIMED_OUT, i)
        await asyncio.sleep(30)
    return i


@step(name="tests.async_acc.blocks_loop")
async def blocks_loop(seconds: float) -> str:
    time.sleep(seconds)  # the mistake the loop-lag monitor names
    return "blocked"


@step(name="tests.async_acc.echo_after")
async def echo_after(i: int, seconds: float) -> int:
    await asyncio.sleep(seconds)
    return i


@step(name="tests.async_acc.run_workflow_name")
async def run_workflow_name(i: int) -> str:
    """Django's async ORM inside an async branch body."""
    row = await Run.objects.aget(id=current_step().run_id)
    return f"{row.workflow}:{i}"


@workflow(name="tests.async_acc.gathered")
async def gathered(ctx: Any, delays: list[float]) -> list[int]:
    first = await asyncio.gather(*(ctx.step(echo_after, i, d) for i, d in enumerate(delays)))
    await ctx.sleep(0.05)  # the rest runs in a new pass, which replays the gather
    second = await asyncio.gather(*(ctx.step(echo_after, -i, d) for i, d in enumerate(delays)))
    return [*first, *second]


@workflow(name="tests.async_acc.orm_branches")
async def orm_branches(ctx: Any, n: int) -> list[str]:
    return list(await ctx.map(run_workflow_name, range(n)))


@workflow(name="tests.async_acc.fan_out")
async def fan_out(ctx: Any, n: int, seconds: float) -> dict[str, Any]:
    results = await ctx.all([wait_io.s(i, seconds) for i in range(n)])
    return {"count": len(results), "sum": sum(results)}


@workflow(name="tests.async_acc.mixed")
async def mixed(ctx: Any, n: int) -> dict[str, Any]:
    first, second = await asyncio.gather(ctx.step(wait_io, 1, 0.2), ctx.step(sync_square, 3))
    branches = await ctx.all([sync_square.s(i) for i in range(n)] + [wait_io.s(7, 0.05)])
    await ctx.sleep(0.2)
    return {"first": first, "second": second["square"], "branches": len(branches)}


@workflow(name="tests.async_acc.hangs")
def hangs(ctx: Any, n: int) -> list[Any]:
    try:
        return list(ctx.map(hang, range(n)))
    except StepFailed:
        return []


@workflow(name="tests.async_acc.timeouts")
async def timeouts(ctx: Any, n: int) -> list[int]:
    inline = await ctx.step(slow_first, 100)
    return [inline, *await ctx.map(slow_first, range(n))]


@workflow(name="tests.async_acc.blocking")
async def blocking(ctx: Any) -> list[str]:
    return list(await ctx.map(blocks_loop, [0.4]))
