"""The embedded default: with the `memory://` broker, a Celery worker runs inside this process.

It is an ordinary Celery WorkController (threads pool) of the current Celery app, consuming
the same tasks that `celery -A config worker` consumes in production: one path, no toy
shortcut. `runtime.apps` installs `ensure_worker` as the dispatcher's hook before each send.
"""

from __future__ import annotations

import os
import socket
import threading
from typing import Any

from celery import Celery, current_app
from celery.worker import WorkController

from runtime import conf
from runtime.tasks import start_sweeps

_lock = threading.Lock()
_worker: _EmbeddedWorker | None = None
_worker_pid: int | None = None


class _EmbeddedWorker(WorkController):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.ready = threading.Event()
        super().__init__(*args, **kwargs)

    def on_consumer_ready(self, consumer: Any) -> None:
        self.ready.set()


def _app() -> Celery:
    return current_app._get_current_object()  # type: ignore[attr-defined]


def is_embedded() -> bool:
    """True when the configured broker is the in-process one."""
    return str(_app().conf.broker_url or "").startswith("memory://")


def ensure_worker() -> None:
    """Start the in-process worker once per process when the broker is embedded."""
    global _worker, _worker_pid
    if not is_embedded():
        return
    with _lock:
        if _worker is not None and _worker_pid == os.getpid():
            return
        app = _app()
        app.finalize()
        app.set_current()
        worker = _EmbeddedWorker(
            app=app,
            concurrency=conf.get().EMBEDDED_CONCURRENCY,
            pool="threads",
            hostname=f"embedded-{os.getpid()}@{socket.gethostname()}",
            loglevel="WARNING",
            ready_callback=None,
            without_heartbeat=True,
            without_mingle=True,
            without_gossip=True,
        )
        threading.Thread(target=worker.start, name="fanfold-embedded-worker", daemon=True).start()
        if not worker.ready.wait(timeout=30):
            raise RuntimeError("the embedded Celery worker did not start within 30 s")
        _worker, _worker_pid = worker, os.getpid()
    start_sweeps()


def stop_worker() -> None:
    """Stop the in-process worker (tests and commands that want a clean exit)."""
    global _worker
    with _lock:
        if _worker is not None:
            _worker.stop(in_sighandler=False)
            _worker = None
