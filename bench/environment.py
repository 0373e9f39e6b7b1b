"""Where a benchmark runs: the configured database and broker, and worker processes.

With the embedded broker the in-process worker serves the runs. With a real broker the
benchmark starts `celery -A config worker` processes of its own and stops them afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from celery import current_app
from django.conf import settings
from django.db import connection

from bench.workers import ROOT, WorkerProcess
from runtime import embedded
from runtime.registry import versions

LOGS = ROOT / "var"
# Each pool's -c when a benchmark is not told: prefork as `celery worker` on a 2-core machine.
DEFAULT_CONCURRENCY = {"prefork": 2, "threads": 16}


@dataclass(frozen=True)
class Pool:
    """The benchmark's workers: `workers` processes of Celery's `kind` pool, `concurrency` each."""

    kind: str = "prefork"
    workers: int = 1
    concurrency: int = 2
    queue: str | None = None  # the queue they consume (None: the default queue)

    @property
    def slots(self) -> int:
        return self.workers * self.concurrency

    def describe(self) -> dict[str, object]:
        described: dict[str, object] = {
            "pool": self.kind, "workers": self.workers, "concurrency": self.concurrency
        }  # fmt: skip
        if self.queue:
            described["queue"] = self.queue
        return described


def describe() -> dict[str, str]:
    return {
        "database": connection.vendor,
        "broker": "embedded"
        if embedded.is_embedded()
        else settings.CELERY_BROKER_URL.split("://")[0],
    }


def other_workers(timeout: float = 0.5) -> list[str]:
    """Names of the Celery workers already answering on the configured broker (none with the
    embedded one). They would take the benchmark's runs and branches from its own workers."""
    if embedded.is_embedded():
        return []
    # A connection of its own, closed before the benchmark goes on: with the app's pooled one
    # left open, `bench stream`, which forks its SSE readers, hung until its timeout.
    with current_app.connection_for_write() as broker:
        replies = current_app.control.ping(timeout=timeout, connection=broker) or []
    return sorted(name for reply in replies for name in reply)


def write_transactions() -> int | None:
    """The next transaction id PostgreSQL will hand out (None elsewhere).

    Only transactions that write get an id, so the difference across a benchmark counts the
    write transactions of every process (workers, heartbeats, claims), and none of the
    benchmark's own polling reads. Nothing else should write to the server meanwhile.
    """
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint")
        row = cursor.fetchone()
    return int(row[0]) if row else None


def cpu_us_per(before: float | None, after: float | None, items: int) -> float | None:
    """Worker CPU microseconds per step or branch between two `Workers.cpu_seconds()`."""
    if before is None or after is None or not items:
        return None
    return round((after - before) / items * 1e6, 1)


class Workers:
    """The benchmark's worker processes (none with the embedded broker)."""

    def __init__(self, processes: list[WorkerProcess]) -> None:
        self.processes = processes

    def cpu_seconds(self) -> float | None:
        """CPU seconds all of them used so far (None when not measurable, as embedded)."""
        if not self.processes:
            return None
        used = [worker.cpu_seconds() for worker in self.processes]
        return None if None in used else sum(u for u in used if u is not None)


@contextmanager
def workers(pool: Pool, *more: Pool, **extra_env: str) -> Iterator[Workers]:
    """Run the benchmark's workers: real processes for a real broker, else the embedded one."""
    if embedded.is_embedded():
        embedded.ensure_worker()
        yield Workers([])
        return
    # The runs this process starts are pinned to its version (runtime.versions), which counts
    # every workflow module it imported: the workers, loading only the benchmark's, serve it.
    env = {"FANFOLD_APP_VERSION": versions.current(), **extra_env}
    workers = [
        WorkerProcess(
            f"bench{n}-{i}",
            pool=p.kind,
            concurrency=p.concurrency,
            env=env,
            log_dir=LOGS,
            queue=p.queue,
        )
        for n, p in enumerate((pool, *more))
        for i in range(p.workers)
    ]
    try:
        for worker in workers:
            worker.wait_ready()
        yield Workers(workers)
    finally:
        for worker in workers:
            worker.stop()
