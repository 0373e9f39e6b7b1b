"""The flow loop: every worker takes schedule ticks and admits stranded runs itself.

One BackgroundLoop per worker process, no separate beat. Each pass takes due schedule ticks
(in the workers of the deployment version that arrived last only: runtime.versions.listing);
every SWEEP_INTERVAL it also admits runs still waiting for a free slot (the backstop for an
admission lost with a dead process), forgets rate-limit turns long past, indexes the search
attributes of the runs started since (runtime.store.runs.search_pending) and records the
deployment versions it serves (runtime.versions.listing); every minute it
deletes finished runs past their retention, for a few seconds at most (runtime.lifecycle).
A process's first retention pass comes a random part of that minute after its start, so that
workers started together (a deployment) do not all purge at once while they take up work.
"""

from __future__ import annotations

import os
import random
import time

from runtime import conf, schedules
from runtime.flow import admission, ratelimit
from runtime.lifecycle.retention import retention_pass
from runtime.messaging import signals
from runtime.process.background import BackgroundLoop
from runtime.store.runs import search_pending
from runtime.versions import listing


class _Housekeeping:
    """What the first pass in a process does once, and what runs every SWEEP_INTERVAL."""

    def __init__(self) -> None:
        self.synced_pid: int | None = None
        self.next_sweep = 0.0
        self.next_retention = 0.0
        self.ticks = True  # whether this worker takes schedule ticks (listing.leads_schedules)

    def flow_pass(self) -> None:
        now = time.monotonic()
        if self.synced_pid != os.getpid():
            schedules.sync_schedules()
            self.synced_pid = os.getpid()
            self.next_retention = now + random.uniform(0.0, RETENTION_INTERVAL)
        if now >= self.next_sweep:
            self.next_sweep = now + conf.get().SWEEP_INTERVAL
            admission.admit_waiting()
            ratelimit.forget_old_turns()
            signals.purge_expired_signals()  # bounded: one batch per sweep
            listing.heartbeat()  # the versions this worker serves, seen now
            self.ticks = listing.leads_schedules()  # an older version's workers drain
            search_pending.drain_all()  # until a batch comes back short (2 s at most)
        if self.ticks:
            schedules.tick_once()
        if now >= self.next_retention:
            self.next_retention = now + RETENTION_INTERVAL
            retention_pass()
            listing.forget_gone_workers()


# How often each worker deletes the finished runs past their retention (a bounded pass).
RETENTION_INTERVAL = 60.0


def _interval() -> float:
    return conf.get().SCHEDULE_INTERVAL


_housekeeping = _Housekeeping()
loop = BackgroundLoop("fanfold-flow", _interval, _housekeeping.flow_pass)
