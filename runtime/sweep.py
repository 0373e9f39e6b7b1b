"""The recovery sweep: nothing is stranded by a lost message or a dead worker.

It finds runs that should be executing but have no live owner: a lease that expired (the
worker died), or no lease and a wake-up time in the past (a lost timer or start message).
Every worker process runs it on a timer; duplicates are harmless because executions claim
a lease first.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import timedelta

from django.db import connection
from django.db.models import Q
from django.utils import timezone

from runtime import conf
from runtime.models import Run

log = logging.getLogger("fanfold.sweep")


def due_runs(limit: int = 500) -> list[str]:
    now = timezone.now()
    # A grace period lets the ordinary message arrive first; the sweep is the backstop.
    grace = timedelta(seconds=max(conf.get().SWEEP_INTERVAL, 1.0))
    orphaned = Q(lease_token__isnull=False, lease_expires_at__lt=now)
    overdue = Q(lease_token__isnull=True, wake_at__lt=now - grace)
    ids = (
        Run.objects.active()
        .filter(orphaned | overdue)
        .order_by("wake_at")
        .values_list("id", flat=True)[:limit]
    )
    return [str(i) for i in ids]


def sweep_once() -> int:
    """Enqueue every due run once; returns how many."""
    from runtime.dispatch import enqueue_run

    ids = due_runs()
    for run_id in ids:
        import uuid

        enqueue_run(uuid.UUID(run_id))
    if ids:
        log.info("sweep re-enqueued %d run(s)", len(ids))
    return len(ids)


_started = threading.Event()


def start_sweeper() -> None:
    """Start this process's sweep thread (idempotent)."""
    if _started.is_set():
        return
    _started.set()
    threading.Thread(target=_sweep_forever, name="fanfold-sweep", daemon=True).start()


def _sweep_forever() -> None:
    interval = conf.get().SWEEP_INTERVAL
    while True:
        time.sleep(interval)
        try:
            sweep_once()
        except Exception:
            log.exception("recovery sweep failed")
            connection.close()
