"""`bench tasks`: N no-op Django tasks through Fanfold's Tasks backend on a prefork worker
against the same tasks on django-tasks-db's `db_worker`, on the same PostgreSQL, same run.

Each side has its workers running and idle first; the figure is the time from the first
enqueue to the last task's finish (the rows' own `finished_at`). Fanfold's side is one prefork
worker of `concurrency` processes; django-tasks-db's is as many `db_worker` processes (each
runs one task at a time), polling every `interval` seconds when idle. Fanfold's side also
reports the execution messages its worker took (`execute_messages`: one per task or per batch
of tasks, and the duplicates it skipped; `batch_messages` of them carried several tasks).
django-tasks-db is not a dependency of Fanfold: `pip install -e '.[bench]'` brings it (the
TASKS alias "db" of the demo settings uses it when it is installed).
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from importlib.util import find_spec
from typing import Any

from django.core.management.base import CommandError
from django.db import connection
from django.db.models import Max, Min, Model

from bench import counting, environment
from bench.environment import Pool
from bench.workers import ROOT, child_env
from runtime import dispatch
from runtime.dispatch import EXECUTE_RUN, EXECUTE_RUNS
from runtime.models import Event, Run, RunStatus, SearchAttribute, SearchPending, Step

POLL_SECONDS = 0.05


def run_tasks(count: int, timeout: float, pool: Pool, interval: float) -> dict[str, Any]:
    """Both sides, Fanfold's first; returns the report."""
    if find_spec("django_tasks_db") is None:
        raise CommandError(
            "bench tasks compares with django-tasks-db: pip install -e '.[bench]' first"
        )
    fanfold = _fanfold_side(count, timeout, pool)
    baseline = _db_worker_side(count, timeout, pool.slots, interval)
    return {
        "tasks": count,
        "fanfold": fanfold,
        "django_tasks_db": baseline,
        "ratio": round(fanfold["seconds"] / baseline["seconds"], 3),
        **pool.describe(),
        **environment.describe(),
    }


def _vacuum(models: list[type[Model]]) -> None:
    """VACUUM ANALYZE the tables a side writes (PostgreSQL): the rows an earlier round deleted
    are gone, not scanned past by this round (django-tasks-db's claim scans its whole table;
    autovacuum lags rounds that follow one another)."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE " + ", ".join(m._meta.db_table for m in models))


def _fanfold_side(count: int, timeout: float, pool: Pool) -> dict[str, Any]:
    from bench.task_noops import fanfold_noop

    _vacuum([Run, Event, Step, SearchPending, SearchAttribute])
    with environment.workers(pool, **{counting.ENV: counting.counter_url()}):
        counting.reset()
        began = time.monotonic()
        ids = [uuid.UUID(fanfold_noop.enqueue(i).id) for i in range(count)]
        enqueued = time.monotonic() - began
        runs = Run.objects.filter(id__in=ids)
        _until(lambda: runs.filter(status=RunStatus.COMPLETED).count() == count, timeout)
        # Messages still queued (duplicates a backlog draws) are consumed here, not by the
        # next round's workers, whose runs these no longer are.
        _until(lambda: dispatch.queue_depth() in (0, None), timeout)
        time.sleep(0.2)  # what a worker took last is counted as it starts
    span = runs.aggregate(first=Min("created_at"), last=Max("finished_at"))
    runs.delete()
    # Execution messages the worker took: one per task or per batch of tasks (the publisher
    # combines the starts it holds at send time), and the duplicates it skipped.
    consumed = counting.consumed()
    singles, batches = consumed.get(EXECUTE_RUN, 0), consumed.get(EXECUTE_RUNS, 0)
    return {
        **_side(span["first"], span["last"], enqueued),
        "execute_messages": singles + batches,
        "batch_messages": batches,
    }


def _db_worker_side(count: int, timeout: float, processes: int, interval: float) -> dict[str, Any]:
    from django_tasks_db.models import DBTaskResult

    from bench.db_task_noops import db_noop

    _vacuum([DBTaskResult])
    workers = [_db_worker(n, interval) for n in range(processes)]
    try:
        time.sleep(1.0 + interval)  # each has started and polled an empty queue once
        began = time.monotonic()
        ids = [db_noop.enqueue(i).id for i in range(count)]
        enqueued = time.monotonic() - began
        rows = DBTaskResult.objects.filter(id__in=ids)
        _until(lambda: rows.filter(status="SUCCESSFUL").count() == count, timeout)
    finally:
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.wait(timeout=20)
    span = rows.aggregate(first=Min("enqueued_at"), last=Max("finished_at"))
    rows.delete()
    return _side(span["first"], span["last"], enqueued)


def _db_worker(n: int, interval: float) -> subprocess.Popen[bytes]:
    log = (environment.LOGS / f"db-worker-{n}.log").open("wb")
    return subprocess.Popen(
        [sys.executable, "manage.py", "db_worker", "--backend", "db", "--interval",
         str(interval), "--no-startup-delay", "--worker-id", f"bench-{n}"],
        cwd=ROOT,
        env=child_env(),
        stdout=log,
        stderr=subprocess.STDOUT,
    )  # fmt: skip


def _until(done: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise CommandError(f"gave up after {timeout} s waiting for the tasks to finish")
        time.sleep(POLL_SECONDS)


def _side(first: Any, last: Any, enqueued: float) -> dict[str, Any]:
    seconds = (last - first).total_seconds()
    return {"seconds": round(seconds, 3), "enqueue_seconds": round(enqueued, 3)}
