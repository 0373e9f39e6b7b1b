"""The run queue as the metrics read it at scrape time: runs by active state and the oldest
pending run. (Here rather than in runtime.store: the store itself reports metrics.)"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.db.models import Min

from runtime.models.runs import Run


def counts_by_status(states: Iterable[str]) -> dict[str, int]:
    """How many runs are in each of `states` (missing ones are absent)."""
    return Run.objects.filter(status__in=list(states)).counts_by_status()


def oldest_pending_created_at() -> datetime | None:
    """When the oldest pending run was created, or None if none is pending."""
    oldest: datetime | None = Run.objects.pending().aggregate(oldest=Min("created_at"))["oldest"]
    return oldest
