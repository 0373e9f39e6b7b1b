"""The runs the run sweep enqueues again: leases expired, or due and never picked up."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime

from django.db import transaction
from django.db.models import Q

from runtime.models import Run


def take_due_runs(
    now: datetime,
    overdue_before: datetime,
    limit: int,
    versions: Sequence[str] | None = None,
    warm_before: datetime | None = None,
) -> list[tuple[uuid.UUID, int]]:
    """(id, priority) of the active runs whose lease expired, or that are unleased and were
    due before `overdue_before` (before `warm_before`, for those routed to the worker node
    that keeps them parked: runtime.warm.routing), oldest due first. The unleased ones are
    marked due `now`, their route cleared: their message is sent again now, to any worker,
    and a later sweep gives that message as long as this one gave the first before it sends
    one more. Rows another sweeper holds are left to it. With `versions`, only runs pinned
    to one of them: a sweeper sends only what its workers run, so a version nobody serves
    gets no messages piling up in its queues."""
    orphaned = Q(lease_token__isnull=False, lease_expires_at__lt=now)
    overdue = Q(lease_token__isnull=True, wake_at__lt=overdue_before)
    if warm_before is not None:
        routed = Q(lease_token__isnull=True, warm_queue__isnull=False, wake_at__lt=warm_before)
        overdue = (overdue & Q(warm_queue__isnull=True)) | routed
    runs = Run.objects.active()
    if versions is not None:
        runs = runs.filter(app_version__in=list(versions))
    with transaction.atomic():
        rows = list(
            runs.filter(orphaned | overdue)
            .order_by("wake_at")
            .select_for_update(skip_locked=True)
            .values_list("id", "priority", "lease_token")[:limit]
        )
        unleased = [run_id for run_id, _, token in rows if token is None]
        if unleased:
            again = Run.objects.filter(id__in=unleased, lease_token__isnull=True)
            again.update(wake_at=now, warm_queue=None)
    return [(run_id, priority) for run_id, priority, _ in rows]
