"""Schedule rows: created and updated from code, due ones taken under a row lock, ticks
recorded (runtime.schedules decides which ticks are due)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

from django.db import transaction
from django.db.models import Min

from runtime.models import Schedule

T = TypeVar("T")


def get_or_create_schedule(workflow: str, defaults: dict[str, Any]) -> tuple[Schedule, bool]:
    """The workflow's schedule row, created from `defaults` if it has none; (row, created)."""
    return Schedule.objects.get_or_create(workflow=workflow, defaults=defaults)


def update_schedule(row: Schedule, **changes: Any) -> Schedule:
    """Write `changes` to the row and return it as stored."""
    Schedule.objects.filter(id=row.id).update(**changes)
    row.refresh_from_db()
    return row


def schedule_of(workflow: str) -> Schedule | None:
    """The workflow's schedule row, or None."""
    return Schedule.objects.filter(workflow=workflow).first()


def due_schedule_ids(workflows: Sequence[str], now: datetime) -> list[int]:
    """The ids of these workflows' schedules that are not paused and due at `now`."""
    due = Schedule.objects.filter(workflow__in=list(workflows), paused=False, next_tick__lte=now)
    return list(due.values_list("id", flat=True))


def next_schedule_tick(workflows: Sequence[str]) -> datetime | None:
    """The earliest next tick of these workflows' schedules that are not paused."""
    found = Schedule.objects.filter(workflow__in=list(workflows), paused=False).aggregate(
        first=Min("next_tick")
    )
    first: datetime | None = found["first"]
    return first


def take_due_schedule(row_id: int, now: datetime, take: Callable[[Schedule], T]) -> T | None:
    """Lock the schedule row if it is still due and no other worker holds it, and call
    `take(row)` in that transaction; None when it was not taken."""
    with transaction.atomic():
        row = (
            Schedule.objects.select_for_update(skip_locked=True)
            .filter(id=row_id, paused=False, next_tick__lte=now)
            .first()
        )
        if row is None:
            return None  # another worker is taking these ticks, or took them already
        return take(row)


def record_ticks(row: Schedule, through: datetime, next_tick: datetime, now: datetime) -> None:
    """The schedule ticked up to `through`; its next tick is `next_tick`."""
    row.last_tick, row.next_tick, row.updated_at = through, next_tick, now
    row.save(update_fields=["last_tick", "next_tick", "updated_at"])
