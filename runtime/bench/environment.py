"""Where a benchmark runs: the configured database and broker, and worker processes.

With the embedded broker the in-process worker serves the runs. With a real broker the
benchmark starts `celery -A config worker` processes of its own and stops them afterwards.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from django.conf import settings
from django.db import connection

from runtime import embedded

ROOT = Path(__file__).resolve().parents[2]


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
    log_dir = ROOT / "var"
    log_dir.mkdir(exist_ok=True)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for i in range(count):
            log = (log_dir / f"bench-worker-{i}.log").open("wb")
            procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "celery",
                        "-A",
                        "config",
                        "worker",
                        "-P",
                        pool,
                        "-c",
                        str(concurrency),
                        "-n",
                        f"bench{i}@%h",
                        "-Q",
                        settings.CELERY_TASK_DEFAULT_QUEUE,
                        "--without-mingle",
                        "--without-gossip",
                        "--without-heartbeat",
                        "-l",
                        "INFO",
                    ],
                    cwd=ROOT,
                    env={**os.environ, "DATABASE_URL": _database_url(), **extra_env},
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
        for i, proc in enumerate(procs):
            _wait_ready(proc, log_dir / f"bench-worker-{i}.log")
        yield
    finally:
        for proc in procs:
            with suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)


def _database_url() -> str:
    db = settings.DATABASES["default"]
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    auth = db["USER"] + (f":{db['PASSWORD']}" if db.get("PASSWORD") else "")
    return f"postgres://{auth}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


def _wait_ready(proc: subprocess.Popen[bytes], log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"benchmark worker exited early; see {log}")
        if b"ready." in log.read_bytes():
            return
        time.sleep(0.1)
    raise TimeoutError(f"benchmark worker not ready after {timeout}s; see {log}")
