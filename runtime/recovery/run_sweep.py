"""The recovery sweep: nothing is stranded by a lost message or a dead worker.

It finds runs that should be executing but have no live owner: a lease that expired (the
worker died), or no lease and a wake-up time in the past (a lost timer or start message).
Every worker process runs it on a timer; duplicates are harmless because executions claim
a lease first, but each costs a worker a message, so the sweep sends as few as it can: a run
it sends again is due anew from then (runtime.store.runs.run_queue), and while the run queue has
messages waiting a run's message may be one of them, so it counts as lost only much later.

It sends only the runs of the versions its process serves (runtime.registry.versions):
another version's runs are its own workers' to send.
"""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta

from runtime import conf
from runtime.core.clock import current_time
from runtime.core.versions import UNPINNED
from runtime.dispatch import enqueue_run
from runtime.process.background import BackgroundLoop
from runtime.registry import versions
from runtime.store.runs.run_queue import take_due_runs
from runtime.versions.depth import served_queue_depth

log = logging.getLogger("fanfold.sweep")

# As for fan-out branches (runtime.fanout.sweep): a run whose message may wait behind others
# in the queue counts as lost after this many leases unpicked.
QUEUED_GRACE_LEASES = 10


def overdue_grace(depth: int | None) -> float:
    """Seconds an unleased run stays due, its message unpicked, before the sweep sends it
    again, with `depth` messages waiting in the run queue (None: unknown).

    An empty queue holds no run's message: one not picked up within a sweep interval (at
    least a second: the ordinary message arrives first) was lost, or sits in a live worker's
    prefetch, where a duplicate just finds the lease taken. A queue with messages waiting may
    hold the run's message behind them: a copy sent now would wait behind the same backlog
    and only add to it, so the run counts as lost after QUEUED_GRACE_LEASES leases.
    """
    settings = conf.get()
    grace = max(settings.SWEEP_INTERVAL, 1.0)
    if not depth:
        return grace
    return max(grace, QUEUED_GRACE_LEASES * settings.LEASE_SECONDS)


def due_runs(limit: int = 500) -> list[tuple[uuid.UUID, int]]:
    """(id, priority) of the runs to enqueue again, oldest due first; each is due anew from
    now (the next sweep waits for the message sent now as it waited for the first)."""
    now = current_time()
    settings = conf.get()
    grace = overdue_grace(served_queue_depth(settings.RUN_QUEUE or None))
    served = (UNPINNED, *versions.served())
    # A resume sent to the node that keeps its run parked falls back to any worker after its
    # own wait: that node's queue is not the run queue whose depth sets the grace.
    warm = settings.WARM_ROUTE_SECONDS
    warm_before = now - timedelta(seconds=warm) if warm > 0 else None
    return take_due_runs(now, now - timedelta(seconds=grace), limit, served, warm_before)


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
