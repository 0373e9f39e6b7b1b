"""Web servers for tests: `collectstatic`, then gunicorn (or runserver) on config.settings.

Started the way the guide starts them (`gunicorn -c gunicorn.conf.py`), with DEBUG off unless
asked, on the test database and a free port on 127.0.0.1.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.workers import ROOT, database_url
from tests.support.waiting import wait_until


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def production_env(static_root: Path, **extra: str) -> dict[str, str]:
    """The environment of a production process: config.settings, DEBUG off, this test database."""
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_DEBUG"}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        DATABASE_URL=database_url(),
        DJANGO_STATIC_ROOT=str(static_root),
        **extra,
    )
    return env


def collect_static(static_root: Path) -> None:
    """`manage.py collectstatic`, as the deployment guide runs it."""
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "--verbosity", "0"],
        cwd=ROOT,
        env=production_env(static_root),
        check=True,
        timeout=120,
    )


@contextmanager
def running_gunicorn(
    static_root: Path, log_path: Path, workers: int = 2, **extra: str
) -> Iterator[str]:
    """gunicorn serving config.wsgi from `static_root`, extra keyword arguments in its env;
    yields its base URL."""
    port = free_port()
    env = production_env(
        static_root, GUNICORN_BIND=f"127.0.0.1:{port}", GUNICORN_WORKERS=str(workers), **extra
    )
    command = [sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py"]
    with _serving(command, env, port, log_path) as base:
        yield base


@contextmanager
def running_runserver(static_root: Path, log_path: Path, **env: str) -> Iterator[str]:
    """`manage.py runserver` (no reloader) on `static_root`; extra keyword arguments go to its
    env (e.g. DJANGO_DEBUG="1"). Yields its base URL."""
    port = free_port()
    command = [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"]
    with _serving(command, production_env(static_root, **env), port, log_path) as base:
        yield base


@contextmanager
def _serving(command: list[str], env: dict[str, str], port: int, log_path: Path) -> Iterator[str]:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            _wait_for_port(proc, port, log_path)
            yield f"http://127.0.0.1:{port}"
        finally:
            proc.terminate()  # a graceful stop for gunicorn and runserver alike
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


def _wait_for_port(proc: subprocess.Popen[bytes], port: int, log_path: Path) -> None:
    def listening() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(f"gunicorn exited early; see {log_path}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            return False

    wait_until(listening, 60, interval=0.1, message=f"gunicorn on {port} (see {log_path})")
