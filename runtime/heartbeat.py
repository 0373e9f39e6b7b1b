"""Lease heartbeats: a thread per process keeps the leases of its live executions fresh.

A worker killed with SIGKILL stops heartbeating; once its leases expire the recovery sweep
hands those runs to another worker.
"""

from __future__ import annotations

import logging
import threading
from datetime import timedelta

from django.db import connection
from django.utils import timezone

from runtime import conf
from runtime.models import Run

log = logging.getLogger("fanfold.heartbeat")

_lock = threading.Lock()
_live: dict[str, int] = {}  # lease token -> executions holding it
_thread: threading.Thread | None = None
_pid: int | None = None


def hold(token: str) -> None:
    """Keep `token`'s lease alive until `release(token)`."""
    import os

    global _thread, _pid
    with _lock:
        _live[token] = _live.get(token, 0) + 1
        if _thread is None or not _thread.is_alive() or _pid != os.getpid():
            _pid = os.getpid()
            _thread = threading.Thread(target=_beat_forever, name="fanfold-heartbeat", daemon=True)
            _thread.start()


def release(token: str) -> None:
    with _lock:
        count = _live.get(token, 0) - 1
        if count <= 0:
            _live.pop(token, None)
        else:
            _live[token] = count


def beat_once() -> int:
    """Extend every live lease of this process; returns how many runs were touched."""
    with _lock:
        tokens = list(_live)
    if not tokens:
        return 0
    lease = conf.get().LEASE_SECONDS
    until = timezone.now() + timedelta(seconds=lease)
    return Run.objects.filter(lease_token__in=tokens).update(lease_expires_at=until)


def _beat_forever() -> None:
    """Beat while this process holds leases; exit (and close the connection) when idle."""
    import time

    global _thread
    interval = max(conf.get().LEASE_SECONDS / 3, 0.2)
    try:
        while True:
            time.sleep(interval)
            with _lock:
                if not _live:
                    _thread = None
                    return
            try:
                beat_once()
            except Exception:  # a database hiccup must not kill the heartbeat thread
                log.exception("lease heartbeat failed")
                connection.close()
    finally:
        connection.close()
