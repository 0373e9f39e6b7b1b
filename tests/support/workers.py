"""Real `celery -A config worker` processes for acceptance tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts"


def worker_env(**extra: str) -> dict[str, str]:
    """The environment a worker needs to see the test database and the test broker."""
    db = settings.DATABASES["default"]
    env = dict(os.environ)
    env["DATABASE_URL"] = (
        f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{connection.settings_dict['NAME']}"
    )
    env["CELERY_BROKER_URL"] = settings.CELERY_BROKER_URL
    env.update(extra)
    return env


class WorkerProcess:
    def __init__(self, name: str, pool: str, concurrency: int, env: dict[str, str]) -> None:
        ARTIFACTS.mkdir(exist_ok=True)
        self.log_path = ARTIFACTS / f"worker-{name}.log"
        self.log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
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
                f"{name}@%h",
                "-Q",
                settings.CELERY_TASK_DEFAULT_QUEUE,
                "--without-mingle",
                "--without-gossip",
                "--without-heartbeat",
                "-l",
                "INFO",
            ],
            cwd=ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"worker exited early; see {self.log_path}")
            if b"ready." in self.log_path.read_bytes():
                return
            time.sleep(0.1)
        raise TimeoutError(f"worker not ready after {timeout}s; see {self.log_path}")

    def kill(self) -> None:
        """SIGKILL the whole worker process group: no chance to ack, drain or clean up."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log.close()


@contextmanager
def running_worker(
    name: str = "w1", pool: str = "threads", concurrency: int = 4, **env: str
) -> Iterator[WorkerProcess]:
    worker = WorkerProcess(name, pool, concurrency, worker_env(**env))
    try:
        worker.wait_ready()
        yield worker
    finally:
        worker.stop()
