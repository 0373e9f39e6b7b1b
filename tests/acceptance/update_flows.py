"""Workflows for the update acceptance tests (imported by the workers through
FANFOLD_WORKFLOW_MODULES). The step between an update's receipt and its reply kills its own
prefork worker process the first time it runs."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

from runtime import step, workflow
from tests.support.services import counters_redis_client

MODULE = __name__
KILLS = "tests:updates:kills"  # the time.time() of each body execution of `reserve`


@step(name="tests.updates.reserve")
def reserve(sku: str) -> str:
    """Between `update_received` and `update_replied`: SIGKILLs its process the first time."""
    client = counters_redis_client()
    client.rpush(KILLS, time.time())
    if client.llen(KILLS) == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    return f"reserved {sku}"


@workflow(name="tests.updates.order", updates={"reserve": None, "close": None})
def order(ctx: Any) -> list[str]:
    done: list[str] = []
    while (upd := ctx.next_update()) is not None:
        if upd.name == "close":
            upd.reply(done)
            return done
        done.append(ctx.step(reserve, upd.payload["sku"]))
        upd.reply({"reserved": done[-1], "count": len(done)})
    return done
