"""The runs the run sweep enqueues again: leases expired, or due and never picked up."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from django.db.models import Q

from runtime.models import Run


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
