"""Workflows of the failover fault test, imported by the test process and
(FANFOLD_WORKFLOW_MODULES) by the worker processes. Each body records the position of its step
in Redis (the shared server, which the test never stops), so that a body that ran twice is seen
by the bodies' own records, not by the database that failed over."""

from __future__ import annotations

from typing import Any

from runtime import current_step, step, workflow
from tests.faults import fault_workflows as flows
from tests.support.services import counters_redis_client

MODULE = __name__
RAN = "tests:failover:ran"  # one entry ("RUN_ID:POSITION") per body execution of `mark`


@step(name="tests.failover.mark")
def mark(i: int) -> int:
    flows.wait_while_held()
    info = current_step()
    counters_redis_client().rpush(RAN, f"{info.run_id}:{info.position}")
    return i


@workflow(name="tests.failover.sequence")
def sequence(ctx: Any, count: int) -> int:
    """`count` steps one after another, then an at-most-once one."""
    total = 0
    for i in range(count):
        total += ctx.step(mark, i)
    ctx.step(flows.charge, "sequence")
    return total


@workflow(name="tests.failover.fanout")
def fanout(ctx: Any, n: int) -> int:
    """A fan-out of `n` branches, then an at-most-once step."""
    values = ctx.map(mark, range(n))
    ctx.step(flows.charge, "fanout")
    return sum(values)
