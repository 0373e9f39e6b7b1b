"""The runtime's Prometheus metrics and the calls that update them.

Label children are cached in plain dictionaries: `labels()` takes the metric's lock on every
call, a dictionary read under the GIL does not. With `PROMETHEUS_MULTIPROC_DIR` set before the
process starts, prometheus_client keeps every value in a per-process mmap file instead, which
is how prefork children's values reach their parent's exporter (runtime.observe.exporter).
"""

from __future__ import annotations

from typing import Any

from prometheus_client import Counter, Histogram

STEP_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0)
BATCH_BUCKETS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)
COMMIT_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)

RUNS_STARTED = Counter(
    "fanfold_runs_started", "Runs that began executing (pending -> running).", ["workflow"]
)
RUNS_FINISHED = Counter(
    "fanfold_runs_finished", "Runs that finished, by final status.", ["workflow", "status"]
)
STEP_SECONDS = Histogram(
    "fanfold_step_duration_seconds",
    "Step attempts (inline and fan-out branches) from body start to recorded outcome.",
    ["step", "status"],
    buckets=STEP_BUCKETS,
)
STEP_RETRIES = Counter("fanfold_step_retries", "Step attempts that failed and retry.", ["step"])
RESUMES = Counter(
    "fanfold_resumes",
    "Passes of waiting runs, by how they went on: from a parked workflow (warm) or by replay.",
    ["workflow", "how"],
)
CHECKPOINT_BATCH = Histogram(
    "fanfold_checkpoint_batch_size", "Checkpoints per sink transaction.", buckets=BATCH_BUCKETS
)
CHECKPOINT_SECONDS = Histogram(
    "fanfold_checkpoint_commit_seconds",
    "Seconds one checkpoint batch took to commit (or fail).",
    buckets=COMMIT_BUCKETS,
)

_enabled = True
_children: dict[tuple[Any, ...], Any] = {}


def set_enabled(enabled: bool) -> None:
    """Turn metric updates on or off in this process (FANFOLD_METRICS)."""
    global _enabled
    _enabled = enabled


def enabled() -> bool:
    return _enabled


def _child(metric: Any, *values: str) -> Any:
    key = (metric, *values)
    child = _children.get(key)
    if child is None:
        child = _children[key] = metric.labels(*values)
    return child


def run_started(workflow: str) -> None:
    if _enabled:
        _child(RUNS_STARTED, workflow).inc()


def run_finished(workflow: str, status: str) -> None:
    if _enabled:
        _child(RUNS_FINISHED, workflow, status).inc()


def resumed(workflow: str, warm: bool) -> None:
    """A waiting run runs again: `warm` from its parked workflow (runtime.warm)."""
    if _enabled:
        _child(RESUMES, workflow, "warm" if warm else "replay").inc()


def step_attempt(step: str, status: str, seconds: float) -> None:
    """One step attempt ended: `status` is completed, failed or retrying."""
    if not _enabled:
        return
    _child(STEP_SECONDS, step, status).observe(seconds)
    if status == "retrying":
        _child(STEP_RETRIES, step).inc()


def checkpoint_batch(items: int, seconds: float) -> None:
    if _enabled:
        CHECKPOINT_BATCH.observe(items)
        CHECKPOINT_SECONDS.observe(seconds)
