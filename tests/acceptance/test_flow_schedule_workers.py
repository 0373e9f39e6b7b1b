"""Schedules on real worker processes: no beat, the workers take the ticks themselves.

Ticks are 1 s apart; workers look for due ticks every 0.2 s (FANFOLD_SCHEDULE_INTERVAL).
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from runtime.models import Run
from runtime.schedules import pause_schedule
from tests.acceptance import flow_catchup_workflows as catchup
from tests.acceptance import flow_schedule_workflows as flows
from tests.support.waiting import wait_until
from tests.support.workers import running_worker

pytestmark = pytest.mark.django_db(transaction=True)


def ticks_of(workflow: str) -> list[datetime]:
    prefix = f"schedule:{workflow}:"
    keys = Run.objects.filter(workflow=workflow).values_list("idempotency_key", flat=True)
    return sorted(datetime.fromisoformat(str(k).removeprefix(prefix)) for k in keys)


def test_flow_schedules_three_racing_workers_start_one_run_per_tick(counters_redis: Any) -> None:
    env = {"FANFOLD_WORKFLOW_MODULES": flows.MODULE, "FANFOLD_SCHEDULE_INTERVAL": "0.2"}
    name = flows.every_second.name
    with ExitStack() as stack:
        for i in range(3):
            stack.enter_context(running_worker(f"ticker-{i}", "threads", 2, **env))
        wait_until(lambda: Run.objects.filter(workflow=name).count() >= 31, 90, message="31 ticks")
        pause_schedule(name)  # waits for a tick being taken right now; none after it
        wait_until(
            lambda: not Run.objects.filter(workflow=name).exclude(status="completed").exists(),
            30,
            message="the started runs to finish",
        )
    ticks = ticks_of(name)
    assert len(ticks) >= 31
    # One run per tick: consecutive seconds, none missing, none twice (and one body each).
    assert [(t - ticks[0]).total_seconds() for t in ticks] == list(range(len(ticks)))
    bodies = [b.decode() for b in counters_redis.lrange(flows.BODIES, 0, -1)]
    assert sorted(bodies) == sorted(
        str(i) for i in Run.objects.filter(workflow=name).values_list("id", flat=True)
    )


def test_flow_schedules_a_stopped_worker_catches_up_per_policy(counters_redis: Any) -> None:
    env = {
        "FANFOLD_WORKFLOW_MODULES": catchup.MODULE,
        "FANFOLD_SCHEDULE_INTERVAL": "0.2",
        "FANFOLD_SCHEDULE_GRACE": "1.0",  # a tick older than this when taken was missed
    }
    with running_worker("catchup-a", "threads", 2, **env):
        wait_until(lambda: len(ticks_of(catchup.all_ticks.name)) >= 3, 60, message="three ticks")
    stopped = datetime.now(UTC)
    # The point of the test, not a wait for a condition: at least five ticks fall while no
    # worker runs (the workers' clock is the system's).
    time.sleep(6.5)
    with running_worker("catchup-b", "threads", 2, **env):
        restarted = datetime.now(UTC)
        # Every schedule took a tick after the restart: the catch-up passes are all done.
        policies = (catchup.all_ticks.name, catchup.skip.name, catchup.latest.name)
        wait_until(
            lambda: all(any(t > restarted for t in ticks_of(name)) for name in policies),
            30,
            message="a tick after the restart for every policy",
        )

    def fell_while_down(ticks: list[datetime], before: datetime) -> list[datetime]:
        return [t for t in ticks if stopped < t < before]

    down = [stopped.replace(microsecond=0) + timedelta(seconds=s) for s in range(1, 30)]
    down = fell_while_down(down, restarted)
    # Surely missed: more than the grace (and the first pass's delay) older than the restart.
    old = fell_while_down(down, restarted - timedelta(seconds=1.5))
    assert len(down) >= 5 and len(old) >= 3

    every = ticks_of(catchup.all_ticks.name)
    assert [(t - every[0]).total_seconds() for t in every] == list(range(len(every)))
    assert set(down) <= set(every)  # "all": every missed tick got its run

    skipped = fell_while_down(ticks_of(catchup.skip.name), restarted)
    assert not set(skipped) & set(old)  # "skip": no run for a missed tick
    latest = fell_while_down(ticks_of(catchup.latest.name), restarted)
    # "latest": the same on-time ticks as "skip" (same pass), plus one run for the newest missed.
    assert len(latest) == len(skipped) + 1
    assert set(skipped) <= set(latest)
