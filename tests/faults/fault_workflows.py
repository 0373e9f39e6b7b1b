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
HOLD = "tests:faults:hold"  # while set, bodies wait before they begin (see `wait_while_held`)
SLOW_EVERY = 100  # every hundredth leaf takes a while: a worker can be killed inside one
SLOW_SECONDS = 0.3


def wait_while_held() -> None:
    """A test holds the bodies while it injects a fault: however long the fault takes to land
    (rabbitmqctl alone takes seconds to start), the run is still in the middle when it does,
    with bodies in flight through it."""
    client = counters_redis_client()
    while client.exists(HOLD):
        time.sleep(0.01)


@step(name="tests.faults.tick")
def tick(i: int) -> int:
    wait_while_held()
    time.sleep(0.02)
    counters_redis_client().rpush(TICKS, i)
    return i


@step(name="tests.faults.leaf")
def leaf(i: int) -> int:
    wait_while_held()
    time.sleep(SLOW_SECONDS if is_slow(i) else 0.005)
    counters_redis_client().rpush(LEAVES, i)
    return i


def is_slow(i: int) -> bool:
    return i % SLOW_EVERY == SLOW_EVERY - 1


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


STARTS = "tests:faults:starts"  # one entry per time a `chat` run's code starts from its top


@workflow(name="tests.faults.chat")
def chat(ctx: Any, messages: int) -> int:
    """A long-lived run: `messages` waits for a message, each answered by a step. A warm
    resume goes on from the parked call; a replay starts the code again (counted)."""
    counters_redis_client().rpush(STARTS, str(ctx.run_id))
    total = 0
    for _ in range(messages):
        total += ctx.step(tick, ctx.recv("m"))
        ctx.set_value("total", total)
    return total
