"""`bench fanout`: a durable N-branch fan-out against plain Celery groups on the same workers.

The worker processes are started once (prefork by default, as `celery worker` does) and every
side runs on them, in rounds whose order alternates, so a noisy moment hurts each side in turn.
The benchmark process performs the run's first execution itself (what a worker would do), so
the publisher's counters it reads are exactly the branch dispatch's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from celery import current_app
from django.db.models import Max, Min

from bench import counting, environment
from bench.baselines import counted_group_ms, fetched_group_ms, result_backend
from bench.environment import Pool
from bench.stats import median
from publisher.metrics import counters
from runtime import dispatch, embedded, executor
from runtime.dispatch import RUN_BRANCH
from runtime.handles import RunHandle
from runtime.models import Run, Step
from runtime.services import start_run
from runtime.testing import InMemoryDispatcher, use_dispatcher

WARM_UP_BRANCHES = 20


def run_fanout(
    branches: int,
    timeout: float,
    repeat: int = 1,
    worker_env: dict[str, str] | None = None,
    pool: Pool | None = None,
) -> dict[str, Any]:
    """`repeat` rounds of (durable fan-out, baseline A, baseline B); medians and each round's
    ratios are reported."""
    if embedded.is_embedded():
        raise RuntimeError("bench fanout compares worker processes: set CELERY_BROKER_URL")
    pool = pool or Pool()
    backend = result_backend()
    current_app.conf.update(result_backend=backend)
    env = {
        "CELERY_RESULT_BACKEND": backend,
        counting.ENV: counting.counter_url(),
        **(worker_env or {}),
    }
    sides: dict[str, Callable[[], Any]] = {
        "durable": lambda: durable_fanout(branches, timeout),
        "a": lambda: counted_group_ms(branches, timeout),
        "b": lambda: fetched_group_ms(branches, timeout),
    }
    rounds: list[dict[str, Any]] = []
    cpu: dict[str, list[float | None]] = {name: [] for name in sides}
    with environment.workers(pool, **env) as processes:
        # Every side first runs a small one, so none pays for connections and prepares.
        durable_fanout(WARM_UP_BRANCHES, timeout)
        counted_group_ms(WARM_UP_BRANCHES, timeout)
        fetched_group_ms(WARM_UP_BRANCHES, timeout)
        for i in range(repeat):
            order = list(sides) if i % 2 == 0 else list(reversed(sides))
            result: dict[str, Any] = {}
            for name in order:
                before = processes.cpu_seconds()
                result[name] = sides[name]()
                cpu[name].append(environment.cpu_us_per(before, processes.cpu_seconds(), branches))
            result["durable"]["worker_cpu_us_per_branch"] = cpu["durable"][-1]
            rounds.append(result)
    report = _report(branches, pool, rounds)
    # The workers' CPU per branch (the processes that run tasks: bench.workers): steadier than
    # the elapsed times on a busy machine, and what a branch costs the pool besides waiting.
    if all(None not in samples for samples in cpu.values()):
        report["worker_cpu_us_per_branch"] = round(median([c for c in cpu["durable"] if c]), 1)
        report["worker_cpu_us_per_task"] = {
            side: round(median([c for c in samples if c]), 1) for side, samples in cpu.items()
        }
    return report


def _report(branches: int, pool: Pool, rounds: list[dict[str, Any]]) -> dict[str, Any]:
    durables = [r["durable"] for r in rounds]
    report = dict(durables[-1])
    for key in (
        "ttfs_ms", "ttls_ms", "fan_in_ms", "fan_in_after_last_body_ms", "wall_ms",
        "first_pass_cpu_ms",
    ):  # fmt: skip
        report[key] = round(median([d[key] for d in durables]), 1)
    for key in ("consumed_messages", "consumed_branches"):
        report[key] = median([d[key] for d in durables])
    report["consumed_per_branch"] = round(report["consumed_branches"] / branches, 4)
    baseline_a = median([r["a"] for r in rounds])
    baseline_b = median([r["b"] for r in rounds])
    pairs = [
        {
            "fan_in_ms": r["durable"]["fan_in_ms"],
            "baseline_a_ms": round(r["a"], 1),
            "baseline_b_ms": round(r["b"], 1),
            "ratio_to_a": round(r["durable"]["fan_in_ms"] / r["a"], 3),
            "ratio_to_b": round(r["durable"]["fan_in_ms"] / r["b"], 3),
        }
        for r in rounds
    ]
    report.update(
        **pool.describe(),
        repeat=len(rounds),
        # A branch's cost per execution slot: what one worker process (or thread) spends on it.
        per_branch_ms=round(report["fan_in_ms"] * pool.slots / branches, 3),
        baseline_a_ms=round(baseline_a, 1),
        baseline_a_per_task_ms=round(baseline_a * pool.slots / branches, 3),
        baseline_b_ms=round(baseline_b, 1),
        ratio_to_a=round(median([p["ratio_to_a"] for p in pairs]), 3),
        ratio_to_b=round(median([p["ratio_to_b"] for p in pairs]), 3),
        pairs=pairs,
    )
    return report


def durable_fanout(
    branches: int, timeout: float, workflow: str = "examples.fanout_noop", *args: Any
) -> dict[str, Any]:
    """One durable fan-out of `workflow(branches, *args)`, its first pass performed here."""
    with use_dispatcher(InMemoryDispatcher()):  # this process performs the first execution
        run, _ = start_run(workflow, [branches, *args])
    counters.reset()
    counting.reset()
    began = time.perf_counter()
    cpu_began = time.process_time()
    executor.execute(run.id)
    first_pass_cpu_ms = (time.process_time() - cpu_began) * 1000
    publish = counters.snapshot()
    # Woken by the run's notification: the figures come from the run's own timestamps, and a
    # fast poll would only take CPU from the workers on a small machine (a query every 5 ms
    # cost a tenth of a branch's CPU).
    RunHandle(run.id).wait(timeout=timeout)
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
        "fan_in_after_last_body_ms": _ms(run.finished_at - span["last"]),
        "wall_ms": round(wall_ms, 1),
        "first_pass_cpu_ms": round(first_pass_cpu_ms, 1),
        "publish_requests": publish.requests,
        "publish_messages": publish.messages,
        "max_batch_size": publish.max_batch_size,
        **_consumed(timeout),
    }


def _consumed(timeout: float) -> dict[str, int]:
    """Branch messages the workers executed, and the branches those messages ran or found
    done, once the queue has drained (a duplicate still queued when the run finished is
    consumed too, and counts)."""
    deadline = time.monotonic() + min(timeout, 30.0)
    while time.monotonic() < deadline and (dispatch.queue_depth() or 0) > 0:
        time.sleep(0.05)
    time.sleep(0.2)  # what a worker took last is counted as it starts, its branches as it ends
    consumed = counting.consumed()
    return {
        "consumed_messages": consumed.get(RUN_BRANCH, 0),
        "consumed_branches": consumed.get(counting.BRANCHES, 0),
    }


def _ms(delta: Any) -> float:
    return round(delta.total_seconds() * 1000, 1)
