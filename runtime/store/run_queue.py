"""The queue of runs as the metrics and the run sweep see it: counts by state, the oldest
pending run, and the runs due to be enqueued again."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime, timedelta

from django.db.models import Min, Q

from runtime.models import Run


def counts_by_status(states: Iterable[str]) -> dict[str, int]:
    """How many runs are in each of `states` (missing ones are absent)."""
    return Run.objects.filter(status__in=list(states)).counts_by_status()


def oldest_pending_created_at() -> datetime | None:
    """When the oldest pending run was created, or None if none is pending."""
    oldest: datetime | None = Run.objects.pending().aggregate(oldest=Min("created_at"))["oldest"]
    return oldest


def due_runs(now: datetime, grace: timedelta, limit: int) -> list[tuple[uuid.UUID, int]]:
    """(id, priority) of the active runs whose lease expired, or that are unleased and were
    due more than `grace` ago, oldest due first."""
    orphaned = Q(lease_token__isnull=False, lease_expires_at__lt=now)
    overdue = Q(lease_token__isnull=True, wake_at__lt=now - grace)
    ids = (
        Run.objects.active()
        .filter(orphaned | overdue)
        .order_by("wake_at")
        .values_list("id", "priority")[:limit]
    )
    return list(ids)
