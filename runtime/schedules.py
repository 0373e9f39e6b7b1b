"""Schedules: Schedule rows synced from code, and the ticks every worker takes.

There is no beat process. Every worker's flow loop calls `tick_once()`: a due schedule row is
locked with SKIP LOCKED, so one worker takes its ticks while the others pass over it; each
tick's run has the idempotency key `schedule:<workflow>:<tick>`, so even a tick taken twice
(a row lock lost with a dead connection) starts one run. Ticks missed while no worker ran are
handled by the workflow's catch-up policy (runtime.core.schedule.due_ticks).
"""

from __future__ import annotations

import logging
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from runtime import conf
from runtime.core.errors import ScheduleNotFound
from runtime.core.schedule import describe, due_ticks, tick_key
from runtime.models import Schedule
from runtime.registry import WorkflowFunction, registry
from runtime.services import start_run

log = logging.getLogger("fanfold.schedules")


def scheduled_workflows() -> list[WorkflowFunction[object]]:
    """The workflows registered in this process that declare a schedule."""
    return [wf for wf in registry.workflows.values() if wf.flow.schedule is not None]


def sync_schedules(now: datetime | None = None) -> list[Schedule]:
    """Create or update the Schedule row of every scheduled workflow in code.

    A new row starts at `now`: ticks before a schedule existed are not missed ones. A changed
    expression, time zone or policy keeps `paused` and the last tick, and recomputes the next.
    """
    now = now or timezone.now()
    rows = []
    for wf in scheduled_workflows():
        schedule = wf.flow.schedule
        if schedule is None:
            continue
        kind, expression, tz = describe(schedule)
        code = {"kind": kind, "expression": expression, "timezone": tz, "catchup": wf.flow.catchup}
        row, created = Schedule.objects.get_or_create(
            workflow=wf.name,
            defaults={
                **code,
                "created_at": now,
                "updated_at": now,
                "last_tick": now,
                "next_tick": schedule.next_after(now),
            },
        )
        stored = {name: getattr(row, name) for name in code}
        if not created and stored != code:
            last = row.last_tick or now
            Schedule.objects.filter(id=row.id).update(
                **code, updated_at=now, next_tick=schedule.next_after(last)
            )
            row.refresh_from_db()
        rows.append(row)
    return rows


def tick_once(now: datetime | None = None) -> int:
    """Start the runs of every due tick of the schedules this process knows; how many."""
    now = now or timezone.now()
    names = [wf.name for wf in scheduled_workflows()]
    if not names:
        return 0
    due = Schedule.objects.filter(workflow__in=names, paused=False, next_tick__lte=now)
    return sum(_take_ticks(row_id, now) for row_id in due.values_list("id", flat=True))


def _take_ticks(row_id: int, now: datetime) -> int:
    with transaction.atomic():
        row = (
            Schedule.objects.select_for_update(skip_locked=True)
            .filter(id=row_id, paused=False, next_tick__lte=now)
            .first()
        )
        if row is None:
            return 0  # another worker is taking these ticks, or took them already
        wf = registry.workflow(row.workflow)
        schedule = wf.flow.schedule
        if schedule is None:
            return 0
        last = row.last_tick or now
        due = due_ticks(schedule, wf.flow.catchup, last, now, conf.get().SCHEDULE_GRACE)
        for tick in due.run:
            start_run(wf, runtime_key=tick_key(wf.name, tick))  # ownerless
        row.last_tick, row.next_tick = due.through, schedule.next_after(due.through)
        row.updated_at = now
        row.save(update_fields=["last_tick", "next_tick", "updated_at"])
    if due.run != [due.through]:  # anything but the one tick that just fell: a catch-up
        log.info("schedule %s: started %d run(s) up to %s", wf.name, len(due.run), due.through)
    return len(due.run)


def _row(workflow: str) -> Schedule:
    if "\x00" in workflow:  # PostgreSQL text cannot hold NUL: no workflow has such a name
        raise ScheduleNotFound(f"workflow {workflow!r} has no schedule")
    row = Schedule.objects.filter(workflow=workflow).first()
    if row is None and any(wf.name == workflow for wf in scheduled_workflows()):
        sync_schedules()
        row = Schedule.objects.filter(workflow=workflow).first()
    if row is None:
        raise ScheduleNotFound(f"workflow {workflow!r} has no schedule")
    return row


def pause_schedule(workflow: str) -> Schedule:
    """Stop starting runs for this schedule's ticks until it is resumed."""
    row = _row(workflow)
    Schedule.objects.filter(id=row.id).update(paused=True, updated_at=timezone.now())
    row.refresh_from_db()
    return row


def resume_schedule(workflow: str) -> Schedule:
    """Start ticking again from now: ticks that fell while paused are not caught up."""
    row = _row(workflow)
    wf = registry.workflows.get(workflow)
    now = timezone.now()
    changes: dict[str, object] = {"paused": False, "updated_at": now}
    if row.paused and wf is not None and wf.flow.schedule is not None:
        changes.update(last_tick=now, next_tick=wf.flow.schedule.next_after(now))
    Schedule.objects.filter(id=row.id).update(**changes)
    row.refresh_from_db()
    return row
