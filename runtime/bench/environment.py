"""Where a benchmark runs: the configured database and broker, and worker processes.

With the embedded broker the in-process worker serves the runs. With a real broker the
benchmark starts `celery -A config worker` processes of its own and stops them afterwards.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.db import connection

from runtime import embedded
from runtime.workerprocess import ROOT, WorkerProcess

LOGS = ROOT / "var"


def describe() -> dict[str, str]:
    return {
        "database": connection.vendor,
        "broker": "embedded"
        if embedded.is_embedded()
        else settings.CELERY_BROKER_URL.split("://")[0],
    }


def committed_transactions() -> int | None:
    """Commits the database has counted so far (Postgres only; None elsewhere)."""
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
        )
        row = cursor.fetchone()
    return int(row[0]) if row else None


def settle_stats() -> None:
    """Backends report commit counts about once a second; wait for them to land."""
    if connection.vendor == "postgresql":
        time.sleep(1.2)


@contextmanager
def workers(
    count: int = 1, pool: str = "threads", concurrency: int = 8, **extra_env: str
) -> Iterator[None]:
    """Run the benchmark's workers: real processes for a real broker, else the embedded one."""
    if embedded.is_embedded():
        embedded.ensure_worker()
        yield
        return
    workers = [
        WorkerProcess(f"bench{i}", pool=pool, concurrency=concurrency, env=extra_env, log_dir=LOGS)
        for i in range(count)
    ]
    try:
        for worker in workers:
            worker.wait_ready()
        yield
    finally:
        for worker in workers:
            worker.stop()
