"""What the fan-out sweep and the takeover of dead processes' branches read and write: open
groups due for a check, their overdue branches, and running branches by priority."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Max, Q

from runtime.models import FanoutGroup, Step, StepStatus


def take_due_groups(
    now: datetime, limit: int, interval: float, versions: Sequence[str]
) -> list[tuple[Any, ...]]:
    """(id, run id, run status, run priority, first position, released) of the open groups
    of runs of `versions` whose check is due, taken for this pass: their next check is
    `interval` seconds away, so concurrent sweepers share the groups instead of repeating
    each other. A sweeper leaves other versions' groups to their own workers, who know how
    full those versions' queues are."""
    with transaction.atomic():
        due_groups = list(
            FanoutGroup.objects.open()
            .filter(check_at__lt=now, run__app_version__in=list(versions))
            .select_for_update(skip_locked=True, of=("self",))
            .order_by("-run__priority", "check_at")  # the highest priorities republished first
            .values_list(
                "id", "run_id", "run__status", "run__priority", "first_position", "released"
            )[:limit]
        )
        ids = [g[0] for g in due_groups]
        FanoutGroup.objects.filter(id__in=ids).update(check_at=now + timedelta(seconds=interval))
    return due_groups


def stop_checking_group(group_id: Any) -> None:
    """No further sweep checks for this group (its run has finished)."""
    FanoutGroup.objects.filter(id=group_id).update(check_at=None)


def overdue_branches(
    run_id: uuid.UUID, first: int, released: int, now: datetime
) -> list[tuple[int, str, str, int, datetime | None]]:
    """(position, name, status, attempt, wake_at) of the group's released branches that are
    running past their lease or pending past their due time."""
    stale = Q(status=StepStatus.RUNNING, wake_at__lt=now)
    overdue = Q(status=StepStatus.PENDING) & (Q(wake_at__isnull=True) | Q(wake_at__lt=now))
    rows = Step.objects.filter(
        Q(run_id=run_id, position__gte=first, position__lt=first + released) & (stale | overdue)
    ).values_list("position", "name", "status", "attempt", "wake_at")
    return list(rows)


def last_claim(run_id: uuid.UUID, first: int, released: int) -> datetime | None:
    """When a released branch of the group was last claimed (its latest start)."""
    latest: datetime | None = Step.objects.filter(
        run_id=run_id, position__gte=first, position__lt=first + released
    ).aggregate(latest=Max("started_at"))["latest"]
    return latest


def running_branches(
    branches: list[tuple[uuid.UUID, uuid.UUID]],
) -> list[tuple[uuid.UUID, int, int, str, int]]:
    """(run id, run priority, position, name, attempt) of those steps (run id, step id) still
    running, the highest run priority first. Named by their runs too: their weeks'
    partitions are read, not every week's."""
    runs, ids = {run for run, _ in branches}, [step for _, step in branches]
    rows = (
        Step.objects.filter(run_id__in=runs, id__in=ids, status=StepStatus.RUNNING)
        .order_by("-run__priority")
        .values_list("run_id", "run__priority", "position", "name", "attempt")
    )
    return list(rows)


def open_group_spans(run_id: uuid.UUID) -> list[tuple[int, int]]:
    """(first position, total) of the run's open fan-out groups."""
    return list(
        FanoutGroup.objects.open().filter(run_id=run_id).values_list("first_position", "total")
    )
