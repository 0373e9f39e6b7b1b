"""`bench soak`'s gauges, read at the end of each interval: each worker process's resident
memory, the database's connections, the broker's memory and queue depth, the history's
size on disk and the soak's runs the purge has left."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import redis
from django.conf import settings
from django.db import connection

from bench.soak_workflows import PREFIX
from bench.workers import WorkerProcess
from runtime import dispatch
from runtime.models import Run
from runtime.store.lifecycle.partitions import PARTITIONED

MIB = 1024 * 1024


def rss_mib(pid: int) -> float | None:
    """A process's resident set now (VmRSS), in MiB; None once it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    kib = next((line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")), None)
    return round(int(kib) / 1024, 1) if kib is not None else None


def worker_rss(workers: list[WorkerProcess]) -> dict[str, float]:
    """Each worker's main process and pool processes, by `name/main` and `name/pid`."""
    found: dict[str, float] = {}
    for worker in workers:
        name = worker.log_path.stem.removeprefix("worker-")
        pids = [("main", worker.proc.pid)]
        pids += [(str(pid), pid) for pid in worker.task_pids() if pid != worker.proc.pid]
        for label, pid in pids:
            rss = rss_mib(pid)
            if rss is not None:
                found[f"{name}/{label}"] = rss
    return found


def database_connections() -> int | None:
    """Connections to this database now, every process's (pg_stat_activity)."""
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
        row = cursor.fetchone()
    return int(row[0]) if row else None


def history_mib() -> float | None:
    """The runs' table and every per-run history table, partitions and indexes included."""
    if connection.vendor != "postgresql":
        return None
    tables = [Run._meta.db_table, *(m._meta.db_table for m in PARTITIONED)]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT coalesce(sum(pg_total_relation_size(tree.relid)), 0) "
            "FROM unnest(%s::regclass[]) AS t(rel), pg_partition_tree(t.rel) AS tree",
            [tables],
        )
        row = cursor.fetchone()
    return round(int(row[0]) / MIB, 1) if row else None


def autovacuum() -> str | None:
    """The server's `autovacuum` setting: off, the dead rows the purge leaves are never made
    reusable, and the history's size grows however flat its live rows stay."""
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SHOW autovacuum")
        row = cursor.fetchone()
    return str(row[0]) if row else None


def soak_runs() -> int:
    """The soak's runs in the database now: those in flight and the finished ones the
    retention purge has not deleted yet (flat when it keeps up)."""
    return Run.objects.filter(workflow__startswith=PREFIX).count()


def redis_used_mib() -> float | None:
    """The broker's used memory (INFO memory), when the broker is Redis."""
    url: str = settings.CELERY_BROKER_URL
    if not url.startswith(("redis://", "rediss://")):
        return None
    client = redis.Redis.from_url(url)
    try:
        info = client.info("memory")
    finally:
        client.close()
    return round(int(info["used_memory"]) / MIB, 1)


def read(workers: list[WorkerProcess]) -> dict[str, Any]:
    """Every gauge now."""
    return {
        "rss_mib": worker_rss(workers),
        "db_connections": database_connections(),
        "redis_used_mib": redis_used_mib(),
        "queue_depth": dispatch.queue_depth(),
        "history_mib": history_mib(),
        "soak_runs_kept": soak_runs(),
    }
