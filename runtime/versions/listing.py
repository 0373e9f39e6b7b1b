"""Which worker serves which deployment version: each worker's housekeeping pass records its
versions (`heartbeat`), and rows of workers gone for a day are deleted. What the rows tell
(each version's workers, its stranded runs) is runtime.observe.versions.
"""

from __future__ import annotations

import os
import socket
from datetime import datetime, timedelta

from django.utils import timezone

from runtime.registry import versions
from runtime.store.runs.versions import (
    forget_served_before,
    mark_served_txn,
)

# Rows of workers not seen for this long are deleted (a day: long after any stranding).
FORGET_AFTER = timedelta(days=1)


def worker_name() -> str:
    """This process as the served-versions rows name it: host and process id."""
    return f"{socket.gethostname()}:{os.getpid()}"


def heartbeat(now: datetime | None = None) -> None:
    """Record that this worker process serves its versions now (its housekeeping pass)."""
    mark_served_txn(versions.served(), worker_name(), now or timezone.now())


def forget_gone_workers(now: datetime | None = None) -> int:
    """Delete the rows of workers gone for a day; how many."""
    return forget_served_before((now or timezone.now()) - FORGET_AFTER)
