"""Real `celery -A config worker` processes for acceptance tests (bench.workers)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from bench.workers import ROOT, WorkerProcess

ARTIFACTS = ROOT / "artifacts"

__all__ = ["ARTIFACTS", "WorkerProcess", "running_worker"]


@contextmanager
def running_worker(
    name: str = "w1", pool: str = "threads", concurrency: int = 4, **env: str
) -> Iterator[WorkerProcess]:
    """A worker on the test database and broker; extra keyword arguments go to its env."""
    worker = WorkerProcess(name, pool=pool, concurrency=concurrency, env=env, log_dir=ARTIFACTS)
    try:
        worker.wait_ready()
        yield worker
    finally:
        worker.stop()
