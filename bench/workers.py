"""Real `celery -A config worker` processes of the demo project, started and stopped from
Python.

The benchmarks and the acceptance tests both need workers that are separate processes (so a
SIGKILL is a real crash and the GIL is not shared); this is the one place that starts them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlencode

from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parents[1]


def database_url() -> str:
    """A DATABASE_URL naming the database this process is connected to (test databases too)."""
    db = settings.DATABASES["default"]
    name = connection.settings_dict["NAME"]
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{name}"
    auth = db["USER"] + (f":{db['PASSWORD']}" if db.get("PASSWORD") else "")
    hosts, ports = str(db["HOST"]).split(","), str(db["PORT"]).split(",")
    if len(hosts) == 1:
        return f"postgres://{auth}@{db['HOST']}:{db['PORT']}/{name}"
    # A primary and its standbys (config/database_url.py): each host with its port, and the
    # libpq options (target_session_attrs) that choose among them.
    ports = ports if len(ports) == len(hosts) else ports[:1] * len(hosts)
    netloc = ",".join(f"{host}:{port}" for host, port in zip(hosts, ports, strict=True))
    query = urlencode({k: v for k, v in (db.get("OPTIONS") or {}).items() if isinstance(v, str)})
    return f"postgres://{auth}@{netloc}/{name}" + (f"?{query}" if query else "")


def child_env(**extra: str) -> dict[str, str]:
    """The environment of the bench's worker, purge and other processes: its own, on the
    bench's database, with compiled bytecode read and written as an installed package has it.
    Test environments set PYTHONDONTWRITEBYTECODE: then every process compiled each module it
    imported at its start, 1.5 s of a core for `fanfold purge`, paid by the rounds beside it."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "DATABASE_URL": database_url(), **extra}


class WorkerProcess:
    """One worker process in its own process group, logging to `log_dir/worker-NAME.log`."""

    def __init__(
        self,
        name: str,
        *,
        pool: str = "threads",
        concurrency: int = 4,
        env: dict[str, str] | None = None,
        log_dir: Path,
        queue: str | None = None,
        extra_args: Sequence[str] = (),
    ) -> None:
        log_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = log_dir / f"worker-{name}.log"
        self._log = self.log_path.open("wb")
        command = [
            sys.executable, "-m", "bench.parent_bound", str(os.getpid()),
            sys.executable, "-m", "celery", "-A", "config", "worker",
            "-P", pool, "-c", str(concurrency), "-n", f"{name}@%h",
            "-Q", queue or settings.CELERY_TASK_DEFAULT_QUEUE,
            "--without-mingle", "--without-gossip", "--without-heartbeat", "-l", "INFO",
            *extra_args,
        ]  # fmt: skip
        self.proc = subprocess.Popen(
            command,
            cwd=ROOT,
            env=child_env(**(env or {})),
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"worker exited early; see {self.log_path}")
            if b"ready." in self.log_path.read_bytes():
                return
            time.sleep(0.1)
        raise TimeoutError(f"worker not ready after {timeout}s; see {self.log_path}")

    def cpu_seconds(self) -> float | None:
        """CPU seconds the processes that run tasks have used so far: a prefork pool's
        children (live, and reaped by the main process), else the worker process itself.

        A prefork main process is left out: it polls the broker and runs the sweeps, so its
        CPU grows with wall time, not with the work. None where /proc does not tell.
        """
        try:
            children = [
                int(child)
                for thread in Path(f"/proc/{self.proc.pid}/task").iterdir()
                for child in (thread / "children").read_text().split()
            ]
            own, reaped = _cpu_of(self.proc.pid)
            if not children:
                return own
            return reaped + sum(_cpu_of(child)[0] for child in children)
        except OSError:
            return None

    def main_cpu_seconds(self) -> float | None:
        """CPU seconds the worker's main process has used so far (its start, until ready)."""
        try:
            return _cpu_of(self.proc.pid)[0]
        except OSError:
            return None

    def task_pids(self) -> list[int]:
        """The processes that run tasks: a prefork pool's children, else the worker itself."""
        try:
            children = [
                int(child)
                for thread in Path(f"/proc/{self.proc.pid}/task").iterdir()
                for child in (thread / "children").read_text().split()
            ]
        except OSError:
            return []
        return children or [self.proc.pid]

    def peak_rss_mb(self) -> float | None:
        """The largest peak resident set (VmHWM) of the processes that run tasks, in MiB."""
        peaks = []
        for pid in self.task_pids():
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            kib = next((line.split()[1] for line in status.splitlines()
                        if line.startswith("VmHWM:")), None)  # fmt: skip
            if kib is not None:
                peaks.append(int(kib) / 1024)
        return round(max(peaks), 1) if peaks else None

    def kill(self) -> None:
        """SIGKILL the whole process group: no chance to ack, drain or clean up."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM (a warm shutdown), then SIGKILL if it does not exit in time."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self._log.close()


def _cpu_of(pid: int) -> tuple[float, float]:
    """A process's own CPU seconds and those of the children it reaped, from /proc/PID/stat
    (after the command's closing parenthesis: utime, stime, cutime, cstime are the 12th to
    15th fields, in clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / tick, (int(fields[13]) + int(fields[14])) / tick
