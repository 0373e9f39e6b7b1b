"""The baseline's task: a plain, non-durable Celery no-op, for `bench fanout` to compare with."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="fanfold.bench_noop")
def bench_noop(i: int) -> int:
    return i
