"""Workflows of the fault suite, imported by the test process and (FANFOLD_WORKFLOW_MODULES)
by the worker processes. Bodies count themselves in Redis on the shared server, which the
suite never restarts."""

from __future__ import annotations

import time
from typing import Any

from runtime import step, workflow
from tests.support.services import counters_redis_client

MODULE = __name__
TICKS = "tests:faults:ticks"  # one entry per body execution of `tick`
LEAVES = "tests:faults:leaves"  # one entry per body execution of `leaf`
CHARGES = "tests:faults:charges"  # one entry per body execution of the at-most-once `charge`


@step(name="tests.faults.tick")
def tick(i: int) -> int:
    time.sleep(0.02)
    counters_redis_client().rpush(TICKS, i)
    return i


@step(name="tests.faults.leaf")
def leaf(i: int) -> int:
    time.sleep(0.005)
    counters_redis_client().rpush(LEAVES, i)
    return i


@step(name="tests.faults.charge", at_most_once=True)
def charge(label: str) -> str:
    counters_redis_client().rpush(CHARGES, label)
    return label


@workflow(name="tests.faults.steady")
def steady(ctx: Any, count: int) -> int:
    """`count` steps with a short durable sleep after every tenth, then an at-most-once one."""
    total = 0
    for i in range(count):
        total += ctx.step(tick, i)
        if i % 10 == 9:
            ctx.sleep(0.05)
    ctx.step(charge, "steady")
    return total


@workflow(name="tests.faults.wide")
def wide(ctx: Any, n: int) -> int:
    """A fan-out of `n` branches, then an at-most-once step."""
    values = ctx.map(leaf, range(n))
    ctx.step(charge, "wide")
    return sum(values)
