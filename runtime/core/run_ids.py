"""Run ids that sort by creation time (UUID version 7), and the id bounds of a time period.

PostgreSQL keeps the run history in partitions by run id range (docs/design/history.md): an
id's first 48 bits are its creation time in milliseconds since the epoch, so the runs created
in a period are the ids between that period's two bounds, and a query for one run reads one
partition.
"""

from __future__ import annotations

import os
import time
import uuid
from datetime import UTC, datetime, timedelta

# Runs are grouped by the week they were created in, weeks starting on Monday (UTC).
PERIOD = timedelta(days=7)
_EPOCH_MONDAY = datetime(1970, 1, 5, tzinfo=UTC)


def new_run_id() -> uuid.UUID:
    """A fresh run id: UUID version 7 (the creation time in its first 48 bits, then 74 random
    bits), so ids sort by creation time across processes."""
    return id_at(time.time_ns() // 1_000_000)


def id_at(millis: int) -> uuid.UUID:
    """A random version 7 id of the millisecond `millis` since the epoch."""
    rand = int.from_bytes(os.urandom(10), "big")
    value = (millis & (2**48 - 1)) << 80
    value |= 0x7 << 76 | (rand >> 68 & 0xFFF) << 64  # version 7, 12 random bits
    value |= 0b10 << 62 | (rand & (2**62 - 1))  # RFC 4122 variant, 62 random bits
    return uuid.UUID(int=value)


def lower_bound(moment: datetime) -> uuid.UUID:
    """The smallest id of a run created at `moment` (aware) or later."""
    millis = int(moment.timestamp() * 1000)
    return uuid.UUID(int=max(millis, 0) << 80)


def created_at(run_id: uuid.UUID) -> datetime | None:
    """When a version 7 id was made; None for any other id (runs from before partitioning)."""
    if run_id.version != 7:
        return None
    return datetime.fromtimestamp((run_id.int >> 80) / 1000, UTC)


def period_start(moment: datetime) -> datetime:
    """The start of the period `moment` (aware) falls in."""
    periods = (moment - _EPOCH_MONDAY) // PERIOD
    return _EPOCH_MONDAY + periods * PERIOD
