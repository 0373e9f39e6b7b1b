"""Which worker serves which deployment version: each worker's housekeeping pass records its
versions (`heartbeat`), and rows of workers gone for a day are deleted. What the rows tell
(each version's workers, its stranded runs) is runtime.observe.versions.

The rows also say which version arrived last among those live workers serve: only its workers
take schedule ticks (`leads_schedules`), so an old version being drained in a rolling deploy
starts no new runs pinned to itself, and its workers can stop once its runs are done.
"""

from __future__ import annotations

import os
import socket
from datetime import datetime, timedelta

from django.utils import timezone

from runtime import conf
from runtime.models.versions import latest_arrivals
from runtime.registry import versions
from runtime.store.runs.versions import (
    forget_served_before,
    mark_served_txn,
)

# Rows of workers not seen for this long are deleted (a day: long after any stranding).
FORGET_AFTER = timedelta(days=1)
# A worker counts as live for `leads_schedules` while seen within this many heartbeats, and
# at least this many seconds (a worker's housekeeping thread may lag on a loaded host).
LIVE_HEARTBEATS = 3
LIVE_AT_LEAST = 10.0


def worker_name() -> str:
    """This process as the served-versions rows name it: host and process id."""
    return f"{socket.gethostname()}:{os.getpid()}"


def heartbeat(now: datetime | None = None) -> None:
    """Record that this worker process serves its versions now (its housekeeping pass)."""
    mark_served_txn(versions.served(), worker_name(), now or timezone.now())


def forget_gone_workers(now: datetime | None = None) -> int:
    """Delete the rows of workers gone for a day; how many."""
    return forget_served_before((now or timezone.now()) - FORGET_AFTER)


def leads_schedules(now: datetime | None = None) -> bool:
    """Whether this process's version is the latest to arrive (runtime.models.versions) among
    those served by workers seen lately (LIVE_HEARTBEATS, LIVE_AT_LEAST); True when none was."""
    now = now or timezone.now()
    live = max(LIVE_HEARTBEATS * conf.get().SWEEP_INTERVAL, LIVE_AT_LEAST)
    since = now - timedelta(seconds=live)
    latest = latest_arrivals(since)
    return not latest or versions.current() in latest
