"""The bench command's options: refusals of bad ones before anything runs, the worker pool
they describe, and a report flattened into a table's rows."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError

from bench.environment import DEFAULT_CONCURRENCY, Pool, other_workers

# Options that count something: each must be at least 1.
COUNTS = (
    "steps", "runs", "samples", "branches", "repeat", "pairs", "chunks", "clients", "workers",
    "concurrency", "waiting", "rounds", "tasks", "processes", "hosts", "events", "events_per_run",
    "due_events", "updates", "starts", "messages", "long_steps",
)  # fmt: skip
# Scenarios that start worker processes of their own on the configured broker.
WITH_WORKERS = frozenset(
    {
        "seq",
        "concurrent",
        "fanout",
        "flow",
        "stream",
        "history",
        "signals",
        "update",
        "resume",
        "tasks",
        "agents",
        "workers",
        "soak",
    }
)


def _refuse_other_workers() -> None:
    """Workers already on the broker would take the benchmark's messages off its own workers
    (the same queue), and its figures would be wrong without a sign."""
    others = other_workers()
    if others:
        raise CommandError(
            f"{len(others)} Celery worker(s) already answer on this broker ({', '.join(others)})"
            ": they would take the benchmark's messages. Stop them, or point CELERY_BROKER_URL "
            "at a broker (a Redis database, a RabbitMQ vhost) no worker uses."
        )


SEQ_MODES = (
    "observe",
    "versions",
    "vs_dbos",
    "long_steps",
)  # bench seq's alternatives to a plain run


def refuse(scenario: str, options: dict[str, Any]) -> None:
    """CommandError for options out of range, or for workers already on the broker."""
    for name in COUNTS:
        if name in options and options[name] is not None and options[name] < 1:
            raise CommandError(f"--{name.replace('_', '-')} must be at least 1")
    ratio = options.get("trace_ratio", 1.0)
    if options.get("observe") and not 0 < ratio <= 1:
        raise CommandError(f"--trace-ratio must be above 0 and at most 1, got {ratio}")
    chosen = [f"--{name.replace('_', '-')}" for name in SEQ_MODES if options.get(name)]
    if len(chosen) > 1:
        raise CommandError(f"{' and '.join(chosen)} are separate benchmarks: one at a time")
    if scenario in WITH_WORKERS:
        _refuse_other_workers()


def pool_of(options: dict[str, Any], threads_default: int) -> Pool:
    kind = options["pool"]
    concurrency = options["concurrency"]
    if concurrency is None:
        concurrency = threads_default if kind == "threads" else DEFAULT_CONCURRENCY["prefork"]
    return Pool(kind, options["workers"], concurrency)


def flatten(report: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    rows: list[tuple[str, Any]] = []
    for key, value in report.items():
        if isinstance(value, dict):
            rows.extend(flatten(value, f"{prefix}{key}."))
        else:
            rows.append((f"{prefix}{key}", value))
    return rows
