"""`bench checkpoint`: the collector probe behind the ~100 ms regression we must never have.

An asynchronous step start is queued, then its synchronous completion; the probe times how
long the collector takes to hand over that batch and counts every timed wait it made.
"""

from __future__ import annotations

import queue
import time
from typing import Any

from runtime.bench.stats import median
from runtime.checkpoint.batching import BatchCollector, BatchLimits, Checkpoint, Envelope, Waiter


class _CountingQueue(queue.SimpleQueue[Any]):
    """A SimpleQueue that counts blocking gets with a timeout (the timed waits)."""

    def __init__(self) -> None:
        super().__init__()
        self.timed_gets = 0

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        if block and timeout is not None:
            self.timed_gets += 1
        return super().get(block, timeout)


def run_collector_probe(samples: int, window: float) -> dict[str, Any]:
    q = _CountingQueue()
    collector = BatchCollector(q, BatchLimits(async_window=window))
    durations: list[float] = []
    timed_waits_after_sync = 0
    for i in range(samples):
        start = Checkpoint(session="probe", payload=("start", i), size=64, sync=False)
        done = Checkpoint(session="probe", payload=("completed", i), size=64, sync=True)
        q.put(Envelope.write(start))
        q.put(Envelope.write(done, Waiter()))
        waits_before = q.timed_gets
        began = time.perf_counter()
        batch = collector.collect()  # the items are queued: no wait for the first one
        durations.append((time.perf_counter() - began) * 1000)
        if batch is None or len(batch) != 2:
            raise RuntimeError(f"probe {i}: expected the start and completion in one batch")
        timed_waits_after_sync += q.timed_gets - waits_before
    return {
        "scenario": "checkpoint",
        "samples": samples,
        "async_window_ms": window * 1000,
        "collect_ms": {"median": round(median(durations), 5), "max": round(max(durations), 5)},
        "timed_waits_after_sync": timed_waits_after_sync,
        "collector_timed_waits": collector.timed_waits,
    }
