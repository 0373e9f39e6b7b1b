"""`bench fanout --io-ms MS [--async]`: a durable fan-out whose branches wait on I/O.

N branches each wait `io_ms` (an awaited `asyncio.sleep` with `--async`, a blocking sleep
without), on the benchmark's workers (prefork `-c 2` by default), next to a no-op fan-out of
the same size on the same workers, and to Celery's own group of the same waits on a gevent
worker (`-P gevent -c 500`, its own queue, no result backend: completions are counted).
Sides alternate their order round by round. Reported: each side's fan-in time (median of
the rounds), the workers' CPU per branch, and the peak resident memory of every process
that ran branches.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from celery import group

from bench import counting, environment, io_workflows
from bench.environment import Pool
from bench.fanout import durable_fanout
from bench.stats import median

GEVENT_QUEUE = "bench-gevent"
GEVENT = Pool("gevent", 1, 500, queue=GEVENT_QUEUE)
WARM_UP_BRANCHES = 20


def run_io_fanout(
    branches: int, io_ms: float, use_async: bool, timeout: float, repeat: int, pool: Pool
) -> dict[str, Any]:
    """`repeat` rounds of (I/O fan-out, no-op fan-out, Celery's gevent group)."""
    workflow = "bench.io.fanout_async" if use_async else "bench.io.fanout_sync"
    env = {
        counting.ENV: counting.counter_url(),
        "FANFOLD_WORKFLOW_MODULES": io_workflows.__name__,
    }
    sides: dict[str, Callable[[], float]] = {
        "io": lambda: durable_fanout(branches, timeout, workflow, io_ms)["fan_in_ms"],
        "noop": lambda: durable_fanout(branches, timeout)["fan_in_ms"],
        "celery_gevent": lambda: _gevent_group_ms(branches, io_ms, timeout),
    }
    times: dict[str, list[float]] = {name: [] for name in sides}
    cpu: dict[str, list[float]] = {"io": [], "noop": []}
    with environment.workers(pool, GEVENT, **env) as processes:
        runners = environment.Workers(processes.processes[: pool.workers])
        durable_fanout(WARM_UP_BRANCHES, timeout, workflow, io_ms)
        durable_fanout(WARM_UP_BRANCHES, timeout)
        _gevent_group_ms(WARM_UP_BRANCHES, io_ms, timeout)
        for i in range(repeat):
            for name in list(sides) if i % 2 == 0 else list(reversed(sides)):
                before = runners.cpu_seconds()
                times[name].append(sides[name]())
                used = environment.cpu_us_per(before, runners.cpu_seconds(), branches)
                if name in cpu and used is not None:
                    cpu[name].append(used)
        peak = [worker.peak_rss_mb() for worker in runners.processes]
    return _report(branches, io_ms, use_async, pool, times, cpu, peak)


def _gevent_group_ms(branches: int, io_ms: float, timeout: float) -> float:
    key = f"bench:io-group:{uuid.uuid4().hex}"
    began = time.time()
    signatures = (io_workflows.io_wait_counted.s(i, io_ms, key, branches) for i in range(branches))
    group(signatures).apply_async(queue=GEVENT_QUEUE)
    finished = counting.completion_time(key, timeout)
    counting.client().delete(key, f"{key}:done")
    return (finished - began) * 1000


def _report(
    branches: int,
    io_ms: float,
    use_async: bool,
    pool: Pool,
    times: dict[str, list[float]],
    cpu: dict[str, list[float]],
    peak: list[float | None],
) -> dict[str, Any]:
    fan_in = {name: round(median(values), 1) for name, values in times.items()}
    return {
        "scenario": "fanout-io",
        **environment.describe(),
        **pool.describe(),
        "branches": branches,
        "io_ms": io_ms,
        "async": use_async,
        "repeat": len(times["io"]),
        "fan_in_ms": fan_in["io"],
        "noop_fan_in_ms": fan_in["noop"],
        "celery_gevent_500_ms": fan_in["celery_gevent"],
        "ratio_to_noop": round(fan_in["io"] / fan_in["noop"], 3),
        "ratio_to_celery_gevent": round(fan_in["io"] / fan_in["celery_gevent"], 3),
        "worker_cpu_us_per_branch": round(median(cpu["io"]), 1) if cpu["io"] else None,
        "noop_worker_cpu_us_per_branch": round(median(cpu["noop"]), 1) if cpu["noop"] else None,
        "peak_rss_mb_per_process": max((p for p in peak if p is not None), default=None),
        "rounds": {name: [round(v, 1) for v in values] for name, values in times.items()},
    }
