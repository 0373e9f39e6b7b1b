"""`bench checkpoint`: the batch-assembly probe behind the ~100 ms regression we must never have.

An asynchronous step start is queued, then its synchronous completion; the probe times how
long the writer thread's intake takes to hand over that batch (`collect_ms`), and how long a
caller leading with the completion takes (`lead_ms`), and counts every wait for company.
"""

from __future__ import annotations

import time
from typing import Any

from bench.stats import median
from runtime.checkpoint.batching import BatchLimits, Checkpoint, Envelope, Waiter
from runtime.checkpoint.intake import Intake


def _step(i: int) -> tuple[Envelope, Envelope]:
    start = Checkpoint(session="probe", payload=("start", i), size=64, sync=False)
    done = Checkpoint(session="probe", payload=("completed", i), size=64, sync=True)
    return Envelope.write(start), Envelope.write(done, Waiter())


def _timed(take: Any, i: int) -> float:
    began = time.perf_counter()
    batch = take()
    elapsed = (time.perf_counter() - began) * 1000
    if batch is None or len(batch) != 2:
        raise RuntimeError(f"probe {i}: expected the start and completion in one batch")
    return elapsed


def run_collector_probe(samples: int, window: float) -> dict[str, Any]:
    intake = Intake(BatchLimits(async_window=window))
    collect: list[float] = []
    lead: list[float] = []
    timed_waits_after_sync = 0
    for i in range(samples):
        start, done = _step(i)
        intake.put(start)
        intake.put(done)
        waits_before = intake.timed_waits
        collect.append(_timed(intake.next_batch, i))  # the items are queued: no first wait
        timed_waits_after_sync += intake.timed_waits - waits_before
        intake.end_turn()

        start, done = _step(i)
        intake.put(start)
        lead.append(_timed(lambda done=done: intake.lead_with(done), i))
        intake.end_turn()
    return {
        "scenario": "checkpoint",
        "samples": samples,
        "async_window_ms": window * 1000,
        "collect_ms": {"median": round(median(collect), 5), "max": round(max(collect), 5)},
        "lead_ms": {"median": round(median(lead), 5), "max": round(max(lead), 5)},
        "timed_waits_after_sync": timed_waits_after_sync,
        "collector_timed_waits": intake.timed_waits,
    }
