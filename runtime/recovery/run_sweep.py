"""The recovery sweep: nothing is stranded by a lost message or a dead worker.

It finds runs that should be executing but have no live owner: a lease that expired (the
worker died), or no lease and a wake-up time in the past (a lost timer or start message).
Every worker process runs it on a timer; duplicates are harmless because executions claim
a lease first.
"""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta

from django.utils import timezone

from runtime import conf
from runtime.dispatch import enqueue_run
from runtime.process.background import BackgroundLoop
from runtime.store.run_queue import due_runs as due_runs_of_queue

log = logging.getLogger("fanfold.sweep")


def due_runs(limit: int = 500) -> list[tuple[uuid.UUID, int]]:
    """(id, priority) of the runs to enqueue again, oldest due first."""
    now = timezone.now()
    # A grace period lets the ordinary message arrive first; the sweep is the backstop.
    grace = timedelta(seconds=max(conf.get().SWEEP_INTERVAL, 1.0))
    return due_runs_of_queue(now, grace, limit)


def sweep_once() -> int:
    """Enqueue every due run once; returns how many."""
    ids = due_runs()
    for run_id, priority in ids:
        enqueue_run(run_id, priority=priority)
    if ids:
        log.info("sweep re-enqueued %d run(s)", len(ids))
    return len(ids)


def _interval() -> float:
    return conf.get().SWEEP_INTERVAL


loop = BackgroundLoop("fanfold-sweep", _interval, sweep_once)
