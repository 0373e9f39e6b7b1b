"""`bench fanout`'s baselines: the same no-op work as plain Celery groups on the same workers.

A: a group whose tasks store no result; the last completion is counted in Redis, so the
figure is Celery's own cost per message. B: a group whose results go through a result backend
and are fetched, which is what a chord's header pays before its callback can run.
"""

from __future__ import annotations

import os
import time
import uuid

from celery import group
from django.conf import settings

from bench import counting
from bench.tasks import bench_noop, bench_noop_counted


def result_backend() -> str:
    """Where baseline B's results go: BENCH_RESULT_BACKEND, else Redis db 13 (of the broker's
    Redis server when the broker is Redis)."""
    configured = os.environ.get("BENCH_RESULT_BACKEND")
    if configured:
        return configured
    broker = str(settings.CELERY_BROKER_URL)
    if broker.startswith("redis://"):
        return broker.rsplit("/", 1)[0] + "/13"
    return "redis://127.0.0.1:6379/13"


def counted_group_ms(branches: int, timeout: float) -> float:
    """Baseline A: from sending the group to the last task's own completion time."""
    key = f"bench:group:{uuid.uuid4().hex}"
    began = time.time()
    group(bench_noop_counted.s(i, key, branches) for i in range(branches)).apply_async()
    finished = counting.completion_time(key, timeout)
    counting.client().delete(key, f"{key}:done")
    return (finished - began) * 1000


def fetched_group_ms(branches: int, timeout: float) -> float:
    """Baseline B: from sending the group to having every result in hand."""
    began = time.perf_counter()
    results = group(bench_noop.s(i) for i in range(branches)).apply_async()
    values = results.get(timeout=timeout)
    elapsed = (time.perf_counter() - began) * 1000
    results.forget()
    if values != list(range(branches)):
        raise RuntimeError("baseline B's group returned wrong results")
    return elapsed
