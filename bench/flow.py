"""`bench flow`: what admission and rate limits cost, against the same loop without limits.

Three workflows run the same loop of no-op steps: without limits, under a `concurrency`
limit it never reaches (admission on every run), and with a rate-limited step whose rate it
never reaches (a turn taken before every body). Two more fan the same steps out as branches,
without and with the rate limit (a branch of a step without one must cost the same as in a
worker where no limit is registered). Rounds alternate the scenarios so that drift in the
machine's load hits all alike; the report gives medians. Also measured directly in this
process: the latency of starting a run with and without admission, and of taking one turn.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from django.utils import timezone

from bench import environment, flow_workflows
from bench.environment import Pool
from bench.sequential import run_seconds
from bench.stats import median
from runtime.handles import RunHandle, start
from runtime.store.flow.ratelimit import reserve_turn

SCENARIOS = {"plain": "bench.flow.plain", "admitted": "bench.flow.admitted",
             "paced": "bench.flow.paced", "fanned": "bench.flow.fanned",
             "paced_fan": "bench.flow.paced_fan"}  # fmt: skip


def _round(workflow: str, runs: int, steps: int, timeout: float) -> float:
    handles: list[RunHandle] = [start(workflow, steps) for _ in range(runs)]
    for handle in handles:
        handle.wait(timeout=timeout)
    return run_seconds(handles)


def _start_latency_ms(workflow: str, samples: int, timeout: float) -> float:
    """Median ms of `start()` in this process (for `admitted`, that includes the admission)."""
    took, handles = [], []
    for _ in range(samples):
        began = time.perf_counter()
        handles.append(start(workflow, 0))
        took.append((time.perf_counter() - began) * 1000)
    for handle in handles:  # finished before the workers stop: nothing left pending
        handle.wait(timeout=timeout)
    return median(took)


def _turn_latency_ms(samples: int) -> float:
    took = []
    for _ in range(samples):
        began = time.perf_counter()
        reserve_turn("bench.flow.turns", 1e-6, uuid.uuid4(), 1, timezone.now())
        took.append((time.perf_counter() - began) * 1000)
    return median(took)


def run_flow(runs: int, steps: int, repeat: int, timeout: float) -> dict[str, Any]:
    seconds: dict[str, list[float]] = {name: [] for name in SCENARIOS}
    with environment.workers(
        Pool("threads", 1, 8), FANFOLD_WORKFLOW_MODULES=flow_workflows.__name__
    ):
        _round(SCENARIOS["plain"], 2, 5, timeout)  # warm-up: connections, prepared statements
        for _ in range(repeat):
            for name, workflow in SCENARIOS.items():
                seconds[name].append(_round(workflow, runs, steps, timeout))
        plain_start = _start_latency_ms(SCENARIOS["plain"], 50, timeout)
        admitted_start = _start_latency_ms(SCENARIOS["admitted"], 50, timeout)
        turn = _turn_latency_ms(200)
    med = {name: median(values) for name, values in seconds.items()}
    total_steps = runs * steps
    report: dict[str, Any] = {
        "scenario": "flow",
        **environment.describe(),
        "runs": runs,
        "steps_per_run": steps,
        "repeat": repeat,
        **{f"{name}_seconds": round(value, 3) for name, value in med.items()},
        **{f"{name}_runs_per_second": round(runs / value, 1) for name, value in med.items()},
        "admission_overhead_ms_per_run": round((med["admitted"] - med["plain"]) * 1000 / runs, 3),
        "rate_limit_overhead_ms_per_step": round(
            (med["paced"] - med["plain"]) * 1000 / total_steps, 3
        ),
        "rate_limit_overhead_ms_per_branch": round(
            (med["paced_fan"] - med["fanned"]) * 1000 / total_steps, 3
        ),
        "start_ms": {"plain": round(plain_start, 3), "admitted": round(admitted_start, 3)},
        "turn_ms": round(turn, 3),
    }
    return report
