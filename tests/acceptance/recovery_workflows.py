"""Workflows for the worker-recovery acceptance tests.

Imported by the test process and, through FANFOLD_WORKFLOW_MODULES, by the worker processes.
Step bodies record each execution in a Redis list on the broker database, which the test
flushes, so the test can count them across worker processes.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

from runtime import RetryPolicy, current_step, step, workflow
from tests.support.services import counters_redis_client

MODULE = __name__
BODIES = "tests:recovery:bodies"  # one entry per body execution of `tick`
CHARGES = "tests:recovery:charges"  # one entry (the attempt) per body execution of `charge`
RELEASE = "tests:recovery:release"  # never pushed: attempt 1 of `charge` blocks until killed


def client() -> Any:
    return counters_redis_client()


@step(name="tests.recovery.tick")
def tick(i: int) -> int:
    time.sleep(0.01)
    client().rpush(BODIES, i)
    return i


@workflow(name="tests.recovery.slow_loop")
def slow_loop(ctx: Any, count: int) -> int:
    total = 0
    for i in range(count):
        total += ctx.step(tick, i)
    return total


@step(
    name="tests.recovery.charge",
    at_most_once=True,
    retry=RetryPolicy(max_attempts=2, initial_delay=0.2, jitter=False),
)
def charge(order: str) -> dict[str, Any]:
    attempt = current_step().attempt
    client().rpush(CHARGES, attempt)
    if attempt == 1:
        client().blpop([RELEASE], timeout=120)
    return {"order": order, "attempt": attempt}


@workflow(name="tests.recovery.charge_once")
def charge_once(ctx: Any, order: str) -> dict[str, Any]:
    return ctx.step(charge, order)


KILLS = "tests:recovery:kills"  # the time.time() of each body execution of `fall_over`


@step(name="tests.recovery.fall_over")
def fall_over(label: str) -> str:
    """Kills its own worker process the first time it runs (an OOM kill, say)."""
    client().rpush(KILLS, time.time())
    if client().llen(KILLS) == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    return label


@workflow(name="tests.recovery.falls_over_once")
def falls_over_once(ctx: Any) -> list[str]:
    ctx.step(tick, 1)
    return ["ticked", ctx.step(fall_over, "up again")]
