"""The admin's per-workflow page: runs by status and step durations over recent runs.

Percentiles are computed here from the recent runs' step rows (at most `MAX_STEP_ROWS`), not
in SQL: the page reads a bounded slice and works the same on every database.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from runtime.models import Run, RunStatus, Step, StepStatus, choices

RECENT_RUNS = 200
MAX_STEP_ROWS = 50_000


def percentile(values: list[float], fraction: float) -> float:
    """The nearest-rank percentile of `values` (sorted here); 0.0 for none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(math.ceil(fraction * len(ordered)), 1)
    return ordered[rank - 1]


def _summary(durations: list[float]) -> dict[str, Any]:
    return {
        "count": len(durations),
        "p50": f"{percentile(durations, 0.5):.3f} s" if durations else "—",
        "p95": f"{percentile(durations, 0.95):.3f} s" if durations else "—",
    }


def workflow_stats(workflow: str, recent: int = RECENT_RUNS) -> dict[str, Any]:
    """Counts by status over all runs; run and step durations over the `recent` newest."""
    counts = Run.objects.filter(workflow=workflow).counts_by_status()
    runs = list(
        Run.objects.filter(workflow=workflow)
        .order_by("-created_at", "-id")
        .values_list("id", "status", "started_at", "finished_at")[:recent]
    )
    run_seconds = [
        (finished - started).total_seconds()
        for _, status, started, finished in runs
        if status == RunStatus.COMPLETED and started and finished
    ]
    steps: dict[str, list[float]] = defaultdict(list)
    failed: dict[str, int] = defaultdict(int)
    rows = (
        Step.objects.filter(run_id__in=[r[0] for r in runs])
        .order_by()
        .values_list("name", "status", "started_at", "finished_at")[:MAX_STEP_ROWS]
    )
    for name, status, started, finished in rows:
        if status == StepStatus.FAILED:
            failed[name] += 1
        elif status == StepStatus.COMPLETED and started and finished:
            steps[name].append((finished - started).total_seconds())
    return {
        "workflow": workflow,
        "status_counts": [
            (value, label, counts.get(value, 0)) for value, label in choices(RunStatus)
        ],
        "total": sum(counts.values()),
        "recent": len(runs),
        "runs": _summary(run_seconds),
        "steps": [
            {"name": name, "failed": failed.get(name, 0), **_summary(steps.get(name, []))}
            for name in sorted(set(steps) | set(failed))
        ],
    }
