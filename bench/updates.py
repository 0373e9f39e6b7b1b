"""`bench update`: the round trip of an update to a waiting run, against a message plus a
value wait doing the same work.

Update side: one run of `bench.update.counter` waits in `ctx.next_update`; this process sends
`updates` updates one after the other through `RunHandle.update()`, each timed from the call
to its return (validated, recorded, the run woken through the broker, replayed, the reply
committed and announced, this caller woken by the notification). Message side: one run of
`bench.update.counter_by_message`; each round trip is a `send` then `get_value(key, wait=...)`
of the value the run sets in answer (the same wake-up path for the reader).
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from bench import environment, update_workflows
from bench.environment import Pool
from bench.stats import percentile
from runtime import send
from runtime.handles import get_run, start
from runtime.models import Run

WARM_UP = 20  # round trips before the timed ones: connections, prepared statements


def _update_side(updates: int, timeout: float) -> tuple[list[float], uuid.UUID]:
    handle = start(update_workflows.counter)
    run = get_run(handle.id)
    took: list[float] = []
    for i in range(WARM_UP + updates):
        t0 = time.perf_counter()
        total = run.update("add", 1, timeout=timeout)
        if i >= WARM_UP:
            took.append((time.perf_counter() - t0) * 1000)
        if total != i + 1:
            raise RuntimeError(f"update {i} answered {total}, not {i + 1}")
    run.update("stop", None, timeout=timeout)
    return took, handle.id


def _message_side(updates: int, timeout: float) -> tuple[list[float], uuid.UUID]:
    handle = start(update_workflows.counter_by_message)
    run = get_run(handle.id)
    took: list[float] = []
    for i in range(WARM_UP + updates):
        t0 = time.perf_counter()
        send(handle.id, "add", 1)
        total = run.get_value(f"total:{i + 1}", wait=timeout)
        if i >= WARM_UP:
            took.append((time.perf_counter() - t0) * 1000)
        if total != i + 1:
            raise RuntimeError(f"message {i} answered {total}, not {i + 1}")
    send(handle.id, "add", None)
    return took, handle.id


def _figures(took: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(percentile(took, 50), 2),
        "p99_ms": round(percentile(took, 99), 2),
        "max_ms": round(max(took), 2),
    }


def run_update(updates: int, timeout: float, pool: Pool) -> dict[str, Any]:
    """`updates` sequential updates to one waiting run, then as many message-and-value round
    trips to another, on the same workers."""
    env = {"FANFOLD_WORKFLOW_MODULES": update_workflows.__name__}
    created: list[uuid.UUID] = []
    with environment.workers(pool, **env):
        try:
            by_update, rid = _update_side(updates, timeout)
            created.append(rid)
            by_message, rid = _message_side(updates, timeout)
            created.append(rid)
        finally:
            Run.objects.filter(id__in=created).delete()
    update, message = _figures(by_update), _figures(by_message)
    return {
        "scenario": "update",
        **environment.describe(),
        **pool.describe(),
        "updates": updates,
        "update_p50_ms": update["p50_ms"],
        "update_p99_ms": update["p99_ms"],
        "update_max_ms": update["max_ms"],
        "message_value_p50_ms": message["p50_ms"],
        "message_value_p99_ms": message["p99_ms"],
        "message_value_max_ms": message["max_ms"],
    }
