"""`bench fanout`: a durable N-branch fan-out against a plain Celery group on the same workers.

The benchmark process performs the run's first execution itself (what a worker would do), so
the publisher's counters it reads are exactly the branch dispatch's; branches and the resume
after fan-in run on two worker processes.
"""

from __future__ import annotations

import os
import time
from typing import Any

from celery import current_app, group
from django.conf import settings
from django.db.models import Max, Min

from bench import environment
from bench.stats import median
from bench.tasks import bench_noop
from publisher.metrics import counters
from runtime import embedded, executor
from runtime.handles import RunHandle
from runtime.models import Run, Step
from runtime.services import start_run
from runtime.testing import InMemoryDispatcher, use_dispatcher

WARM_UP_BRANCHES = 20


def _result_backend() -> str:
    """Where the baseline group's results go: BENCH_RESULT_BACKEND, else Redis db 13 (of the
    broker's Redis server when the broker is Redis)."""
    configured = os.environ.get("BENCH_RESULT_BACKEND")
    if configured:
        return configured
    broker = str(settings.CELERY_BROKER_URL)
    if broker.startswith("redis://"):
        return broker.rsplit("/", 1)[0] + "/13"
    return "redis://127.0.0.1:6379/13"


# Per worker (two of them): a prefork child runs one branch at a time, a thread too.
FANOUT_CONCURRENCY = {"threads": 16, "prefork": 4}


def run_fanout(
    branches: int,
    timeout: float,
    repeat: int = 1,
    worker_env: dict[str, str] | None = None,
    pool: str = "threads",
) -> dict[str, Any]:
    """`repeat` pairs of (durable fan-out, Celery group), alternating; medians are reported."""
    if embedded.is_embedded():
        raise RuntimeError("bench fanout compares worker processes: set CELERY_BROKER_URL")
    app = current_app
    backend = _result_backend()
    app.conf.update(result_backend=backend)
    durables: list[dict[str, Any]] = []
    baselines: list[float] = []
    with environment.workers(
        count=2,
        pool=pool,
        concurrency=FANOUT_CONCURRENCY[pool],
        CELERY_RESULT_BACKEND=backend,
        **(worker_env or {}),
    ) as workers:
        # Both sides first run a small one, so neither pays for connections and prepares.
        _durable(WARM_UP_BRANCHES, timeout)
        _baseline(WARM_UP_BRANCHES, timeout)
        for _ in range(repeat):
            cpu_before = workers.cpu_seconds()
            durable = _durable(branches, timeout)
            durable["worker_cpu_us_per_branch"] = environment.cpu_us_per(
                cpu_before, workers.cpu_seconds(), branches
            )
            durables.append(durable)
            baselines.append(_baseline(branches, timeout))
    report = dict(durables[-1])
    report["pool"] = pool
    if None not in (cpus := [d["worker_cpu_us_per_branch"] for d in durables]):
        report["worker_cpu_us_per_branch"] = round(median(cpus), 1)
    for key in ("ttfs_ms", "ttls_ms", "fan_in_ms", "wall_ms", "first_pass_cpu_ms"):
        report[key] = round(median([d[key] for d in durables]), 1)
    baseline_ms = median(baselines)
    report["baseline_group_ms"] = round(baseline_ms, 1)
    report["ratio_to_group"] = round(report["fan_in_ms"] / baseline_ms, 3)
    report["repeat"] = repeat
    if repeat > 1:
        report["ratio_samples"] = [
            round(d["fan_in_ms"] / b, 3) for d, b in zip(durables, baselines, strict=True)
        ]
    return report


def _durable(branches: int, timeout: float) -> dict[str, Any]:
    with use_dispatcher(InMemoryDispatcher()):  # this process performs the first execution
        run, _ = start_run("examples.fanout_noop", [branches])
    counters.reset()
    began = time.perf_counter()
    cpu_began = time.process_time()
    executor.execute(run.id)
    first_pass_cpu_ms = (time.process_time() - cpu_began) * 1000
    publish = counters.snapshot()
    RunHandle(run.id).wait(timeout=timeout, poll_interval=0.005)
    wall_ms = (time.perf_counter() - began) * 1000
    run = Run.objects.get(id=run.id)
    if run.finished_at is None or run.status != "completed":
        raise RuntimeError(f"the fan-out run ended {run.status}: {run.error}")
    span = Step.objects.filter(run_id=run.id).aggregate(
        first=Min("started_at"), last=Max("finished_at")
    )
    return {
        "scenario": "fanout",
        **environment.describe(),
        "branches": branches,
        "ttfs_ms": _ms(span["first"] - run.created_at),
        "ttls_ms": _ms(span["last"] - run.created_at),
        "fan_in_ms": _ms(run.finished_at - run.created_at),
        "wall_ms": round(wall_ms, 1),
        "first_pass_cpu_ms": round(first_pass_cpu_ms, 1),
        "publish_requests": publish.requests,
        "publish_messages": publish.messages,
        "max_batch_size": publish.max_batch_size,
    }


def _baseline(branches: int, timeout: float) -> float:
    began = time.perf_counter()
    results = group(bench_noop.s(i) for i in range(branches)).apply_async()
    values = results.get(timeout=timeout)
    elapsed = (time.perf_counter() - began) * 1000
    if values != list(range(branches)):
        raise RuntimeError("the baseline group returned wrong results")
    return elapsed


def _ms(delta: Any) -> float:
    return round(delta.total_seconds() * 1000, 1)
