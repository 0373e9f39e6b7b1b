"""Workflows for the fan-out acceptance tests.

Imported by the test process (as `tests.acceptance.fanout_flows`) and, through
FANFOLD_WORKFLOW_MODULES, by the worker processes. Each branch body records its item in a
Redis list on the broker database, which the test flushes, so bodies can be counted across
worker processes.
"""

from __future__ import annotations

import os
import time
from typing import Any

from runtime import step, workflow
from tests.support.services import counters_redis_client

MODULE = __name__
BODIES = "tests:fanout:bodies"


def client() -> Any:
    return counters_redis_client()


@step(name="tests.fanout_acc.mark")
def mark(i: int, pause: float = 0.0) -> int:
    if pause:
        time.sleep(pause)
    client().rpush(BODIES, i)
    return i * 2


@workflow(name="tests.fanout_acc.marks")
def marks(ctx: Any, n: int, pause: float = 0.0) -> dict[str, Any]:
    values = ctx.all([mark.s(i, pause) for i in range(n)])
    return {
        "count": len(values),
        "sum": sum(values),
        "ordered": values == [2 * i for i in range(n)],
    }


@step(name="tests.fanout_acc.where")
def where(tag: str) -> str:
    """Which worker ran this body: its TEST_WORKER_ROLE."""
    return os.environ.get("TEST_WORKER_ROLE", "?")


@workflow(name="tests.fanout_acc.roles")
def roles(ctx: Any, n: int) -> dict[str, Any]:
    inline = ctx.step(where, "inline")
    branches = ctx.map(where, ["branch"] * n)
    return {"inline": inline, "branches": sorted(set(branches))}
