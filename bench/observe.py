"""`--observe` for `bench seq` and `bench fanout`: the scenario with metrics and tracing off
and on, and the figures of both side by side.

"On" is the expensive configuration: prometheus_client in multiprocess mode (every update an
mmap write), and an OpenTelemetry SDK provider whose batch processor takes every span. "Off"
is FANFOLD_METRICS=0 and FANFOLD_TRACING=0. Workers are prefork unless told otherwise (the
pool `celery worker` starts by default). `seq` keeps an "off" and an "on" worker alive side by
side and lets them take runs in turn (bench.interleave); `fanout`, whose branches would spread
over both, starts its workers anew for each side, alternately. The benchmark process itself is
switched too, for the fan-out's first execution, which it performs. Beside the wall-clock
figure each side reports the workers' CPU per step or branch.
"""

from __future__ import annotations

import os
import tempfile
import time
import uuid
from collections.abc import Callable
from typing import Any

from bench import environment, tracing
from bench.environment import Pool
from bench.fanout import run_fanout
from bench.interleave import interleaved_sequential, summary
from bench.stats import median
from runtime.observe import metrics
from runtime.observe import tracing as spans
from runtime.observe.attempts import RunPass, StepAttempt
from runtime.observe.switches import configure

Scenario = Callable[[dict[str, str]], dict[str, Any]]

OFF = {"FANFOLD_METRICS": "0", "FANFOLD_TRACING": "0"}
SAMPLE_PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def _on(multiproc_dir: str) -> dict[str, str]:
    modules = [m for m in os.environ.get("FANFOLD_WORKFLOW_MODULES", "").split(",") if m]
    return {
        "FANFOLD_METRICS": "1",
        "FANFOLD_TRACING": "1",
        "PROMETHEUS_MULTIPROC_DIR": multiproc_dir,
        "FANFOLD_WORKFLOW_MODULES": ",".join([*modules, "bench.tracing"]),
        tracing.ENV: "1",
    }


def instrumentation_us(commits_per_step: int, traceparent: str | None, n: int = 5000) -> float:
    """Microseconds the observability calls of one step add (on minus off), in this process.

    A step attempt around `commits_per_step` synchronous checkpoint commits, each with the
    writer's metrics and the commit wait the step's span is told of: the calls the runtime
    makes per step, without the step. Steadier than the end-to-end figures on a busy machine,
    which move by more than the difference. Metrics here are single-process ones (the mode is
    fixed at import), a microsecond or two per update cheaper than the workers' mmap files.
    """

    def per_step() -> float:
        run_id = uuid.uuid4()
        with RunPass(run_id, "bench.observe"):
            began = time.perf_counter()
            for position in range(n):
                with StepAttempt(run_id, "bench.step", position, 1, traceparent) as attempt:
                    for _ in range(commits_per_step):
                        metrics.checkpoint_batch(2, 0.0005)
                        spans.waited_for_commit(0.0005)
                    attempt.outcome = "completed"
            return (time.perf_counter() - began) / n * 1e6

    tracing.install()
    configure(metrics_enabled=False, tracing_enabled=False)
    off = min(per_step() for _ in range(3))
    configure(metrics_enabled=True, tracing_enabled=True)
    on = min(per_step() for _ in range(3))
    return round(on - off, 1)


def _overhead_pct(off: float, on: float, higher_is_better: bool) -> float:
    return round(((off / on) if higher_is_better else (on / off)) * 100 - 100, 1)


def compare(
    scenario: Scenario, figure: str, cpu_figure: str, pairs: int, *, higher_is_better: bool
) -> dict[str, Any]:
    """Run `scenario` `pairs` times each way; report both medians of `figure` (and of
    `cpu_figure`, the workers' CPU per item, lower is better) and the median of the pairs'
    own overheads. Pairs run off-on, on-off, off-on, ...: a machine that slows down or speeds
    up during the series does not favour one side."""
    tracing.install()
    off: list[dict[str, Any]] = []
    on: list[dict[str, Any]] = []
    try:
        for pair in range(pairs):
            for side_on in (False, True) if pair % 2 == 0 else (True, False):
                configure(metrics_enabled=side_on, tracing_enabled=side_on)
                if not side_on:
                    off.append(scenario(OFF))
                    continue
                with tempfile.TemporaryDirectory(prefix="fanfold-bench-prom-") as directory:
                    on.append(scenario(_on(directory)))
    finally:
        configure(metrics_enabled=True, tracing_enabled=True)
    off_value = median([r[figure] for r in off])
    on_value = median([r[figure] for r in on])
    observed: dict[str, Any] = {
        "figure": figure,
        "pairs": pairs,
        "off": off_value,
        "on": on_value,
        "off_samples": [r[figure] for r in off],
        "on_samples": [r[figure] for r in on],
        "overhead_pct": _overhead_pct(off_value, on_value, higher_is_better),
        # Each pair ran back to back, so its ratio shares the machine's load of that moment.
        "pair_overhead_pct": [
            _overhead_pct(a[figure], b[figure], higher_is_better)
            for a, b in zip(off, on, strict=True)
        ],
    }
    observed["pair_overhead_median_pct"] = round(median(observed["pair_overhead_pct"]), 1)
    if all(r.get(cpu_figure) is not None for r in off + on):
        cpu_off = median([r[cpu_figure] for r in off])
        cpu_on = median([r[cpu_figure] for r in on])
        observed["cpu_figure"] = cpu_figure
        observed["cpu_off"] = cpu_off
        observed["cpu_on"] = cpu_on
        observed["cpu_overhead_pct"] = _overhead_pct(cpu_off, cpu_on, higher_is_better=False)
        observed["cpu_off_samples"] = [r[cpu_figure] for r in off]
        observed["cpu_on_samples"] = [r[cpu_figure] for r in on]
    return {**on[-1], "observe": observed}


def with_instrumentation_cost(
    report: dict[str, Any], step_us: float, commits: int, traceparent: str | None = None
) -> dict[str, Any]:
    """`report` with the instrumentation's cost per step, absolute and against `step_us` (the
    time one step takes with observability off, from the end-to-end figure), and the "on"
    side's sampling ratio."""
    cost = instrumentation_us(commits, traceparent)
    report["observe"]["trace_ratio"] = tracing.sample_ratio()
    report["observe"]["instrumentation_us_per_step"] = cost
    report["observe"]["instrumentation_pct_of_step"] = round(cost / step_us * 100, 1)
    return report


def observe_sequential(steps: int, timeout: float, pairs: int, pool: Pool) -> dict[str, Any]:
    """`bench seq --observe`: steps per second of runs taken in turn by an "off" and an "on"
    worker alive together (bench.interleave), and the per-step instrumentation."""
    tracing.install()
    runs = interleaved_sequential(steps, timeout, pairs, pool.kind, OFF, _on)
    report: dict[str, Any] = {
        "scenario": "seq",
        **environment.describe(),
        "steps": steps,
        "pool": pool.kind,
        "observe": summary(runs),
    }
    # One commit per step: its start is queued and commits with its completion.
    return with_instrumentation_cost(report, 1e6 / report["observe"]["off"], 1)


def observe_fanout(
    branches: int, timeout: float, repeat: int, pairs: int, pool: Pool
) -> dict[str, Any]:
    """`bench fanout --observe`: fan-in time off and on, and the per-branch instrumentation
    (a branch's span waits for its report's commit and links to the publish span; its claim
    commits before the span starts)."""
    report = compare(
        lambda env: run_fanout(branches, timeout, repeat, env, pool),
        "fan_in_ms",
        "worker_cpu_us_per_branch",
        pairs,
        higher_is_better=False,
    )
    per_branch_us = report["observe"]["off"] * 1000 / branches
    return with_instrumentation_cost(report, per_branch_us, 1, SAMPLE_PARENT)
