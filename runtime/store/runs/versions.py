"""Run rows by deployment version (runtime.versions): a run's version, moving runs from one
version to another, and recording which workers serve which version (the reads the metrics
need too are runtime.models.versions's)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from runtime.models import ACTIVE_RUN_STATES, Event, EventType, Run, RunStatus, ServedVersion


def run_version(run_id: uuid.UUID) -> str | None:
    """The version `run_id` is pinned to ("" before versions); None if there is no such run."""
    found = Run.objects.filter(id=run_id).values_list("app_version", flat=True).first()
    return None if found is None else str(found)


def active_run_ids(version: str, after: uuid.UUID | None = None, limit: int = 500) -> list[Any]:
    """The ids of `version`'s runs in flight, in id order after `after`, `limit` at most."""
    rows = Run.objects.filter(status__in=ACTIVE_RUN_STATES, app_version=version)
    if after is not None:
        rows = rows.filter(id__gt=after)
    return list(rows.order_by("id").values_list("id", flat=True)[:limit])


def move_runs_txn(
    run_ids: Sequence[uuid.UUID], from_version: str, to_version: str, by: dict[str, Any] | None
) -> list[uuid.UUID]:
    """Move these runs, if still in flight on `from_version` and not leased by a live
    executor, to `to_version`, each with a `version_upgraded` event naming who did it (`by`);
    the ids moved. Rows are locked in id order."""
    now = timezone.now()
    free = Q(lease_token__isnull=True) | Q(lease_expires_at__lt=now)
    moved: list[uuid.UUID] = []
    with transaction.atomic():
        runs = (
            Run.objects.select_for_update()
            .filter(id__in=list(run_ids), app_version=from_version, status__in=ACTIVE_RUN_STATES)
            .filter(free)
            .order_by("id")
            .only("id", "last_seq")
        )
        events = []
        for run in runs:
            seq = run.last_seq + 1
            Run.objects.filter(id=run.id).update(
                app_version=to_version, last_seq=seq, updated_at=now
            )
            payload = {"from": from_version, "to": to_version, "by": by}
            events.append(
                Event(
                    run_id=run.id,
                    seq=seq,
                    type=EventType.VERSION_UPGRADED,
                    payload=payload,
                    created_at=now,
                )
            )
            moved.append(run.id)
        Event.objects.bulk_create(events)
    return moved


def mark_served_txn(versions: Sequence[str], worker: str, now: datetime) -> None:
    """Record that `worker` serves these versions as of `now` (one upsert; a new row's
    `first_seen` is `now`, a known row's stays)."""
    rows = [
        ServedVersion(version=v, worker=worker, last_seen=now, first_seen=now) for v in versions
    ]
    ServedVersion.objects.bulk_create(
        rows,
        update_conflicts=True,
        unique_fields=["version", "worker"],
        update_fields=["last_seen"],
    )


def forget_served_before(before: datetime) -> int:
    """Delete the rows of workers not seen since `before`; how many."""
    deleted, _ = ServedVersion.objects.filter(last_seen__lt=before).delete()
    return int(deleted)


def runs_by_ids(run_ids: Sequence[uuid.UUID]) -> list[Run]:
    """These runs' rows, in id order."""
    return list(Run.objects.filter(id__in=list(run_ids)).order_by("id"))


def unwaiting_priorities(run_ids: Sequence[uuid.UUID]) -> list[tuple[uuid.UUID, int]]:
    """(id, priority) of those of these runs that do not wait for a timer or a callback."""
    rows = Run.objects.filter(id__in=list(run_ids)).exclude(status=RunStatus.WAITING)
    return list(rows.values_list("id", "priority"))
