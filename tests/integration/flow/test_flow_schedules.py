"""Schedule rows and ticks: sync from code, one run per tick, catch-up, pause and resume."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from runtime.core.errors import ScheduleNotFound
from runtime.models import Run, Schedule
from runtime.schedules import pause_schedule, resume_schedule, sync_schedules, tick_once
from runtime.testing import InMemoryDispatcher
from tests.integration.flow import flow_workflows as flows

T0 = datetime(2030, 1, 1, 12, 0, 30, tzinfo=UTC)


def keys(workflow: str) -> list[str]:
    runs = Run.objects.filter(workflow=workflow).order_by("idempotency_key")
    return [str(k) for k in runs.values_list("idempotency_key", flat=True)]


def test_schedules_sync_creates_rows_from_code_starting_now() -> None:
    sync_schedules(T0)
    row = Schedule.objects.get(workflow=flows.every_minute.name)
    assert (row.kind, row.expression, row.timezone, row.catchup) == (
        "cron",
        "* * * * *",
        "UTC",
        "latest",
    )
    assert row.last_tick == T0 and row.next_tick == datetime(2030, 1, 1, 12, 1, tzinfo=UTC)
    ten = Schedule.objects.get(workflow=flows.every_ten_seconds.name)
    assert (ten.kind, ten.expression, ten.catchup) == ("interval", "10", "all")


def own_runs() -> int:
    """Runs of this module's scheduled workflows (other modules' may be registered too)."""
    names = [flows.every_minute.name, flows.every_ten_seconds.name]
    return Run.objects.filter(workflow__in=names).count()


def test_schedules_a_tick_starts_one_run_with_its_key(dispatcher: InMemoryDispatcher) -> None:
    sync_schedules(T0)
    tick_once(T0 + timedelta(seconds=5))
    assert own_runs() == 0
    tick_once(T0 + timedelta(seconds=31))
    assert own_runs() == 1 + 3  # the minute; 12:00:40, :50, 12:01:00
    tick_once(T0 + timedelta(seconds=31))
    assert own_runs() == 4
    assert keys(flows.every_minute.name) == [
        f"schedule:{flows.every_minute.name}:2030-01-01T12:01:00+00:00"
    ]


def test_schedules_catch_up_after_downtime_per_policy(dispatcher: InMemoryDispatcher) -> None:
    sync_schedules(T0)
    later = T0 + timedelta(minutes=10)  # nobody ticked for ten minutes
    tick_once(later)
    # latest: the newest missed minute, and 12:10 which is on time (30 s old, grace 60 s)
    assert keys(flows.every_minute.name) == [
        f"schedule:{flows.every_minute.name}:2030-01-01T12:09:00+00:00",
        f"schedule:{flows.every_minute.name}:2030-01-01T12:10:00+00:00",
    ]
    assert len(keys(flows.every_ten_seconds.name)) == 60  # all: every missed tick


def test_schedules_racing_workers_start_one_run_per_tick(dispatcher: InMemoryDispatcher) -> None:
    sync_schedules(T0)
    barrier = threading.Barrier(4)
    now = T0 + timedelta(minutes=1)

    def worker() -> None:
        try:
            barrier.wait()
            tick_once(now)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(keys(flows.every_minute.name)) == 1
    assert len(keys(flows.every_ten_seconds.name)) == 6


def test_schedules_paused_ones_do_not_tick_and_resume_from_now(
    dispatcher: InMemoryDispatcher,
) -> None:
    sync_schedules(T0)
    pause_schedule(flows.every_minute.name)
    tick_once(T0 + timedelta(minutes=5))
    assert keys(flows.every_minute.name) == []
    row = resume_schedule(flows.every_minute.name)
    assert not row.paused and row.next_tick is not None
    with pytest.raises(ScheduleNotFound):
        pause_schedule(flows.limited.name)
