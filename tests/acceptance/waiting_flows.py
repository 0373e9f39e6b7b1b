"""Workflows of the waiting acceptance tests; workers import them through
FANFOLD_WORKFLOW_MODULES=tests.acceptance.waiting_flows. Bodies count in Redis (the broker's
database, flushed by each test) so the test sees what every worker process did."""

from __future__ import annotations

import time
from typing import Any

from runtime import CallbackTimedOut, FatalError, StepFailed, step, workflow
from tests.support.services import counters_redis_client

MODULE = __name__
POLLS = "tests:waiting:polls"
CHILDREN = "tests:waiting:children"  # +1 when a child's body starts, -1 when it ends
OVERLAP = "tests:waiting:overlap"  # the number of child bodies running, after each start


@step(name="tests.waiting.poll_counter")
def poll_counter(needed: int) -> dict[str, int] | None:
    polls = int(counters_redis_client().incr(POLLS))
    return {"polls": polls} if polls >= needed else None


@workflow(name="tests.waiting.condition")
def condition(ctx: Any, needed: int) -> Any:
    return ctx.wait_for_condition(poll_counter, needed, interval=0.2, timeout=60)


@workflow(name="tests.waiting.cb_in_sleep")
def cb_in_sleep(ctx: Any, timeout: float, sleep: float) -> Any:
    cb = ctx.create_callback("answer", timeout=timeout)
    ctx.sleep(sleep)
    try:
        return {"answer": cb.wait()}
    except CallbackTimedOut:
        return {"timed_out": True}


@step(name="tests.waiting.enter")
def enter() -> int:
    running = int(counters_redis_client().incr(CHILDREN))
    counters_redis_client().rpush(OVERLAP, running)
    time.sleep(0.2)
    counters_redis_client().decr(CHILDREN)
    return running


@step(name="tests.waiting.refuse")
def refuse(n: int) -> None:
    raise FatalError(f"item {n} is refused")


@workflow(name="tests.waiting.child")
def child(ctx: Any, n: int) -> int:
    ctx.step(enter)
    ctx.sleep(30 if n >= 100 else 0.1)  # a child may sleep: no worker is held meanwhile
    if n == 3:
        ctx.step(refuse, n)
    return n * 10


def shown(results: list[Any]) -> list[Any]:
    return [{"failed": r.error_type} if isinstance(r, StepFailed) else r for r in results]


@workflow(name="tests.waiting.map_children")
def map_children(ctx: Any, items: list[int]) -> Any:
    return shown(ctx.map(child, items, max_concurrency=2, return_exceptions=True))


@workflow(name="tests.waiting.map_children_strict")
def map_children_strict(ctx: Any, items: list[int]) -> Any:
    try:
        return ctx.map(child, items)
    except StepFailed as exc:
        return {"failed": exc.position, "type": exc.error_type}


@workflow(name="tests.waiting.map_children_quorum")
def map_children_quorum(ctx: Any, items: list[int]) -> Any:
    return shown(ctx.map(child, items, min_successful=2, return_exceptions=True))
