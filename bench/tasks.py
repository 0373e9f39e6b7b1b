"""The baselines' tasks: plain, non-durable Celery no-ops for `bench fanout` to compare with."""

from __future__ import annotations

from celery import shared_task

from bench import counting


@shared_task(name="fanfold.bench_noop")
def bench_noop(i: int) -> int:
    """Baseline B's task: its result goes through the result backend to the caller."""
    return i


@shared_task(name="fanfold.bench_noop_counted", ignore_result=True)
def bench_noop_counted(i: int, key: str, total: int) -> None:
    """Baseline A's task: no result backend; completions are counted in Redis."""
    counting.completed(key, total)
