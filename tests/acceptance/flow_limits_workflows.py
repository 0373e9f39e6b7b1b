"""Workflows for the flow-control acceptance tests: concurrency limits, priorities, rate limits.

Imported by the test process and, through FANFOLD_WORKFLOW_MODULES, by the worker processes.
Step bodies record what they did in Redis lists on the broker database (flushed per test),
with wall-clock times, so the test can measure overlap and pace across processes.
"""

from __future__ import annotations

import json
import time
from typing import Any

from runtime import step, workflow
from tests.support.services import counters_redis_client

MODULE = __name__
SPANS = "tests:flow:spans"  # one JSON [key, start, end] per body of `hold`
ORDER = "tests:flow:order"  # labels of `queued` and `stall` bodies, in start order
RELEASE = "tests:flow:release"  # pushed by the test to let the blocker finish
NEVER = "tests:flow:never"  # never pushed: the first `stall` of "doomed" blocks until killed
PACED = "tests:flow:paced"  # start times of `paced` bodies


def client() -> Any:
    return counters_redis_client()


@step(name="tests.accept.flow.hold")
def hold(key: str, seconds: float) -> str:
    start = time.time()
    time.sleep(seconds)
    client().rpush(SPANS, json.dumps([key, start, time.time()]))
    return key


@workflow(name="tests.accept.flow.capped", concurrency=3)
def capped(ctx: Any, key: str) -> str:
    return ctx.step(hold, key, 0.3)


@workflow(name="tests.accept.flow.keyed", concurrency=2)
def keyed(ctx: Any, key: str) -> str:
    return ctx.step(hold, key, 0.3)


@step(name="tests.accept.flow.queued")
def queued(label: str) -> str:
    client().rpush(ORDER, label)
    if label == "blocker":
        client().blpop([RELEASE], timeout=60)
    return label


@workflow(name="tests.accept.flow.queue", concurrency=1)
def queue(ctx: Any, label: str) -> str:
    return ctx.step(queued, label)


@step(name="tests.accept.flow.stall")
def stall(label: str) -> str:
    runs = client().incr(f"tests:flow:stall:{label}")
    client().rpush(ORDER, f"{label}:start")
    if label == "doomed" and runs == 1:
        client().blpop([NEVER], timeout=120)  # the worker is killed in here
    client().rpush(ORDER, f"{label}:end")
    return label


@workflow(name="tests.accept.flow.solo", concurrency=1)
def solo(ctx: Any, label: str) -> str:
    return ctx.step(stall, label)


@step(name="tests.accept.flow.paced", rate_limit="20/s")
def paced(i: int) -> int:
    client().rpush(PACED, repr(time.time()))
    return i


@workflow(name="tests.accept.flow.paced_once")
def paced_once(ctx: Any, i: int) -> int:
    return ctx.step(paced, i)


FANNED = "tests:flow:fanned"  # labels of `leaf` bodies, in start order


@step(name="tests.accept.flow.leaf")
def leaf(label: str, i: int) -> str:
    client().rpush(FANNED, label)
    return f"{label}{i}"


@workflow(name="tests.accept.flow.fan")
def fan(ctx: Any, label: str, n: int) -> list[str]:
    return ctx.all([leaf.s(label, i) for i in range(n)])
