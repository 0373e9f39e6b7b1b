"""Real `celery -A config worker` processes for acceptance tests (bench.workers)."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from bench.workers import ROOT, WorkerProcess

# Worker logs are named by worker name: each pytest-xdist worker keeps them in a folder of its own.
ARTIFACTS = ROOT / "artifacts" / os.environ.get("PYTEST_XDIST_WORKER", "")

__all__ = ["ARTIFACTS", "WorkerProcess", "running_worker", "supervised_worker"]


@contextmanager
def running_worker(
    name: str = "w1",
    pool: str = "threads",
    concurrency: int = 4,
    queue: str | None = None,
    extra_args: Sequence[str] = (),
    **env: str,
) -> Iterator[WorkerProcess]:
    """A worker on the test database and broker (on `queue`, else the default queue), with
    `extra_args` on its command line; extra keyword arguments go to its env."""
    worker = WorkerProcess(
        name, pool=pool, concurrency=concurrency, env=env, log_dir=ARTIFACTS, queue=queue,
        extra_args=extra_args,
    )  # fmt: skip
    try:
        worker.wait_ready()
        yield worker
    finally:
        worker.stop()


@contextmanager
def supervised_worker(
    name: str = "w1", pool: str = "threads", concurrency: int = 4, **env: str
) -> Iterator[list[WorkerProcess]]:
    """A worker started again whenever it exits, as systemd's Restart=always would do.

    Yields the list of the worker processes started so far (the last one is current).
    """
    started = [WorkerProcess(name, pool=pool, concurrency=concurrency, env=env, log_dir=ARTIFACTS)]
    started[0].wait_ready()
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(0.2):
            if started[-1].proc.poll() is not None:
                again = f"{name}-{len(started)}"
                started.append(
                    WorkerProcess(
                        again, pool=pool, concurrency=concurrency, env=env, log_dir=ARTIFACTS
                    )
                )

    watcher = threading.Thread(target=watch, name=f"supervise-{name}", daemon=True)
    watcher.start()
    try:
        yield started
    finally:
        stop.set()
        watcher.join()
        for worker in started:
            worker.stop()
