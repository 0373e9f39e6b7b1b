"""`bench seq` and `bench concurrent`: sequential no-op steps, one run or many at once."""

from __future__ import annotations

import contextlib
import time
from itertools import pairwise
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import Max, Min
from django.test.utils import override_settings

from bench import environment
from bench.environment import Pool
from bench.sinkfloor import sink_steps_per_second
from bench.stats import p50_p95
from runtime.handles import RunHandle, start
from runtime.models import Run, Step
from runtime.store import writer


def _stso_ms(run_id: Any) -> list[float]:
    """Gaps between one step body's end and the next one's start, in milliseconds."""
    rows = list(
        Step.objects.filter(run_id=run_id)
        .order_by("position")
        .values_list("started_at", "finished_at")
    )
    return [
        (nxt[0] - cur[1]).total_seconds() * 1000 for cur, nxt in pairwise(rows) if cur[1] and nxt[0]
    ]


def bare_commit_rate(samples: int = 1000) -> float | None:
    """Single-row INSERT + COMMIT per second on this database: the ceiling for one run."""
    if connection.vendor != "postgresql":
        return None
    # A real (WAL-logged) table: a temporary one would skip the WAL flush that every durable
    # commit pays.
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE IF NOT EXISTS fanfold_bench_commit (v int)")
        try:
            started = time.perf_counter()
            for i in range(samples):
                cursor.execute("INSERT INTO fanfold_bench_commit (v) VALUES (%s)", [i])
            return samples / (time.perf_counter() - started)
        finally:
            cursor.execute("DROP TABLE fanfold_bench_commit")


def run_seconds(handles: list[RunHandle]) -> float:
    """From the first run's creation to the last one's end, by the runs' own timestamps.

    Not by polling: `wait` backs off to half a second between reads, which would swamp
    a run of a few seconds.
    """
    span = Run.objects.filter(id__in=[h.id for h in handles]).aggregate(
        first=Min("created_at"), last=Max("finished_at")
    )
    return float((span["last"] - span["first"]).total_seconds())


def warm_up(timeout: float) -> None:
    """One short run first: the worker's first task pays for connections and prepares."""
    start("examples.noop_loop", 10).wait(timeout=timeout)


def noop_run_rate(steps: int, timeout: float) -> float:
    """Start one run of `steps` no-op steps, wait for it: its steps per second."""
    handle = start("examples.noop_loop", steps)
    handle.wait(timeout=timeout)
    return round(steps / run_seconds([handle]), 1)


def run_sequential(
    steps: int,
    timeout: float,
    worker_env: dict[str, str] | None = None,
    pool: Pool | None = None,
) -> dict[str, Any]:
    """One run of `steps` no-op steps: one worker process executes it, whatever the pool."""
    pool = pool or Pool()
    with environment.workers(pool, **(worker_env or {})) as workers:
        warm_up(timeout)
        tx_before = environment.write_transactions()
        cpu_before = workers.cpu_seconds()
        handle = start("examples.noop_loop", steps)
        handle.wait(timeout=timeout)
        cpu_after = workers.cpu_seconds()
        tx_after = environment.write_transactions()
    seconds = run_seconds([handle])
    gaps = _stso_ms(handle.id)
    report: dict[str, Any] = {
        "scenario": "seq",
        **environment.describe(),
        **pool.describe(),
        "steps": steps,
        "seconds": round(seconds, 3),
        "steps_per_second": round(steps / seconds, 1),
        "stso_ms": p50_p95(gaps),
        "stso_first_1000_ms": p50_p95(gaps[:1000]),
        "stso_last_1000_ms": p50_p95(gaps[-1000:]),
        "transactions_per_step": _per_step(tx_before, tx_after, steps),
        "worker_cpu_us_per_step": environment.cpu_us_per(cpu_before, cpu_after, steps),
        "run_id": str(handle.id),
    }
    first, last = report["stso_first_1000_ms"]["p95"], report["stso_last_1000_ms"]["p95"]
    report["stso_growth_p95"] = round(last / first, 3) if first else None
    bare = bare_commit_rate()
    if bare:
        report["bare_commit_per_second"] = round(bare, 1)
        report["ratio_to_bare_commit"] = round(report["steps_per_second"] / bare, 3)
    floor = sink_steps_per_second()
    if floor:
        report["sink_steps_per_second"] = round(floor, 1)
    return report


RUN_QUEUE = "fanfold-bench-runs"


def run_concurrent(
    runs: int,
    steps: int,
    timeout: float,
    pool: Pool | None = None,
    runs_on_threads: int = 0,
) -> dict[str, Any]:
    """`runs` runs of `steps` no-op steps at once, on the pool's execution slots.

    `runs_on_threads=C`: the executions go to a queue of their own on a threads worker `-c C`
    (FANFOLD_RUN_QUEUE), the pool's workers keep the default queue (docs/deploying.md).
    """
    pool = pool or Pool("threads", 1, runs)
    pools = [pool]
    env: dict[str, str] = {}
    layout: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()
    if runs_on_threads:
        pools.append(Pool("threads", 1, runs_on_threads, queue=RUN_QUEUE))
        env["FANFOLD_RUN_QUEUE"] = RUN_QUEUE
        layout = override_settings(FANFOLD={**settings.FANFOLD, "RUN_QUEUE": RUN_QUEUE})
    with layout, environment.workers(pools[0], *pools[1:], **env):
        warm_up(timeout)
        tx_before = environment.write_transactions()
        handles: list[RunHandle] = [start("examples.noop_loop", steps) for _ in range(runs)]
        for handle in handles:
            handle.wait(timeout=timeout)
        tx_after = environment.write_transactions()
    seconds = run_seconds(handles)
    total = runs * steps
    return {
        "scenario": "concurrent",
        **environment.describe(),
        **pool.describe(),
        **({"runs_on": pools[1].describe()} if runs_on_threads else {}),
        "runs": runs,
        "steps_per_run": steps,
        "steps": total,
        "seconds": round(seconds, 3),
        "steps_per_second": round(total / seconds, 1),
        "transactions_per_step": _per_step(tx_before, tx_after, total),
    }


def _per_step(before: int | None, after: int | None, steps: int) -> float | None:
    if before is None or after is None:
        stats = writer().stats
        return round(stats.committed_batches / steps, 3) if steps else None
    return round((after - before) / steps, 3)
