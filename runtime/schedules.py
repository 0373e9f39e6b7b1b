"""Schedules: Schedule rows synced from code, and the ticks every worker takes.

There is no beat process. Every worker's flow loop calls `tick_once()`: a due schedule row is
locked with SKIP LOCKED, so one worker takes its ticks while the others pass over it; each
tick's run has the idempotency key `schedule:<workflow>:<tick>`, so even a tick taken twice
(a row lock lost with a dead connection) starts one run. Ticks missed while no worker ran are
handled by the workflow's catch-up policy (runtime.core.schedule.due_ticks).
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from datetime import datetime
from functools import partial
from typing import Any

from runtime import conf
from runtime.core.clock import current_time
from runtime.core.errors import ScheduleNotFound
from runtime.core.schedule import describe, due_ticks, tick_key
from runtime.models import Schedule
from runtime.registry import WorkflowFunction, registry
from runtime.services import start_run
from runtime.store.flow.schedules import (
    due_schedule_ids,
    get_or_create_schedule,
    record_ticks,
    schedule_of,
    take_due_schedule,
    update_schedule,
)

log = logging.getLogger("fanfold.schedules")


def scheduled_workflows() -> list[WorkflowFunction[..., object]]:
    """The workflows registered in this process that declare a schedule."""
    return [wf for wf in registry.workflows.values() if wf.flow.schedule is not None]


def sync_schedules(now: datetime | None = None) -> list[Schedule]:
    """Create or update the Schedule row of every scheduled workflow in code.

    A new row starts at `now`: ticks before a schedule existed are not missed ones. A changed
    expression, time zone or policy keeps `paused` and the last tick, and recomputes the next.
    """
    now = now or current_time()
    rows = []
    for wf in scheduled_workflows():
        schedule = wf.flow.schedule
        if schedule is None:
            continue
        kind, expression, tz = describe(schedule)
        code = {"kind": kind, "expression": expression, "timezone": tz, "catchup": wf.flow.catchup}
        row, created = get_or_create_schedule(
            wf.name,
            {
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
            update_schedule(row, **code, updated_at=now, next_tick=schedule.next_after(last))
        rows.append(row)
    return rows


def tick_once(now: datetime | None = None, only: Collection[str] | None = None) -> int:
    """Start the runs of every due tick of the schedules this process knows (`only` those of
    these workflows, if given); how many."""
    now = now or current_time()
    names = [wf.name for wf in scheduled_workflows() if only is None or wf.name in only]
    if not names:
        return 0
    return sum(_take_ticks(row_id, now) for row_id in due_schedule_ids(names, now))


def _take_ticks(row_id: int, now: datetime) -> int:
    taken = take_due_schedule(row_id, now, partial(_start_due_ticks, now=now))
    if taken is None:
        return 0
    wf, due = taken
    if due.run != [due.through]:  # anything but the one tick that just fell: a catch-up
        log.info("schedule %s: started %d run(s) up to %s", wf.name, len(due.run), due.through)
    return len(due.run)


def _start_due_ticks(
    row: Schedule, *, now: datetime
) -> tuple[WorkflowFunction[..., object], Any] | None:
    """In the row's locked transaction: start a run per due tick and record them."""
    wf = registry.workflow(row.workflow)
    schedule = wf.flow.schedule
    if schedule is None:
        return None
    last = row.last_tick or now
    due = due_ticks(schedule, wf.flow.catchup, last, now, conf.get().SCHEDULE_GRACE)
    for tick in due.run:
        start_run(wf, runtime_key=tick_key(wf.name, tick))  # ownerless
    record_ticks(row, due.through, schedule.next_after(due.through), now)
    return wf, due


def _row(workflow: str) -> Schedule:
    if "\x00" in workflow:  # PostgreSQL text cannot hold NUL: no workflow has such a name
        raise ScheduleNotFound(f"workflow {workflow!r} has no schedule")
    row = schedule_of(workflow)
    if row is None and any(wf.name == workflow for wf in scheduled_workflows()):
        sync_schedules()
        row = schedule_of(workflow)
    if row is None:
        raise ScheduleNotFound(f"workflow {workflow!r} has no schedule")
    return row


def pause_schedule(workflow: str) -> Schedule:
    """Stop starting runs for this schedule's ticks until it is resumed."""
    row = _row(workflow)
    return update_schedule(row, paused=True, updated_at=current_time())


def resume_schedule(workflow: str) -> Schedule:
    """Start ticking again from now: ticks that fell while paused are not caught up."""
    row = _row(workflow)
    wf = registry.workflows.get(workflow)
    now = current_time()
    changes: dict[str, object] = {"paused": False, "updated_at": now}
    if row.paused and wf is not None and wf.flow.schedule is not None:
        changes.update(last_tick=now, next_tick=wf.flow.schedule.next_after(now))
    return update_schedule(row, **changes)
