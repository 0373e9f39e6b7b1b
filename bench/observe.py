"""`--observe` for `bench seq` and `bench fanout`: the scenario with metrics and tracing off,
then on, alternately, and the figures of both side by side.

"On" is the expensive configuration: prometheus_client in multiprocess mode (every update an
mmap write), and an OpenTelemetry SDK provider whose batch processor takes every span. "Off"
is FANFOLD_METRICS=0 and FANFOLD_TRACING=0. The benchmark process itself is switched too, for
the fan-out's first execution, which it performs.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from typing import Any

from bench import tracing
from bench.stats import median
from runtime.observe.switches import configure

Scenario = Callable[[dict[str, str]], dict[str, Any]]

OFF = {"FANFOLD_METRICS": "0", "FANFOLD_TRACING": "0"}


def _on(multiproc_dir: str) -> dict[str, str]:
    modules = [m for m in os.environ.get("FANFOLD_WORKFLOW_MODULES", "").split(",") if m]
    return {
        "FANFOLD_METRICS": "1",
        "FANFOLD_TRACING": "1",
        "PROMETHEUS_MULTIPROC_DIR": multiproc_dir,
        "FANFOLD_WORKFLOW_MODULES": ",".join([*modules, "bench.tracing"]),
        tracing.ENV: "1",
    }


def compare(
    scenario: Scenario, figure: str, pairs: int, *, higher_is_better: bool
) -> dict[str, Any]:
    """Run `scenario` `pairs` times each way, off first; report both medians of `figure`."""
    tracing.install()
    off: list[dict[str, Any]] = []
    on: list[dict[str, Any]] = []
    try:
        for _ in range(pairs):
            configure(metrics_enabled=False, tracing_enabled=False)
            off.append(scenario(OFF))
            configure(metrics_enabled=True, tracing_enabled=True)
            with tempfile.TemporaryDirectory(prefix="fanfold-bench-prom-") as directory:
                on.append(scenario(_on(directory)))
    finally:
        configure(metrics_enabled=True, tracing_enabled=True)
    off_value = median([r[figure] for r in off])
    on_value = median([r[figure] for r in on])
    cost = (off_value / on_value - 1) if higher_is_better else (on_value / off_value - 1)
    return {
        **on[-1],
        "observe": {
            "figure": figure,
            "pairs": pairs,
            "off": off_value,
            "on": on_value,
            "off_samples": [r[figure] for r in off],
            "on_samples": [r[figure] for r in on],
            "overhead_pct": round(cost * 100, 1),
        },
    }
