"""A step that kills its own prefork worker process. With liveness locks and the default lease
(30 s) the run is taken over through the dead process's liveness lock in seconds, not after
its lease; without them (their default behind a pooler) when its lease expires."""

from __future__ import annotations

from typing import Any

import pytest

from runtime import conf, start
from runtime.models import Event, Run
from tests.acceptance import recovery_workflows as flows
from tests.support.workers import running_worker

pytestmark = pytest.mark.django_db(transaction=True)

DEFAULTS = {"FANFOLD_LEASE_SECONDS": "30", "FANFOLD_SWEEP_INTERVAL": "5"}
# Held behind a pooler too (through FANFOLD_DIRECT_DATABASE_URL), where their default is off.
LOCKS_ON = {"FANFOLD_LIVENESS_LOCKS": "on"}


def test_worker_takeover_a_killed_prefork_child_is_taken_over_before_its_lease_ends(
    counters_redis: Any,
) -> None:
    env = {"FANFOLD_WORKFLOW_MODULES": flows.MODULE, **DEFAULTS, **LOCKS_ON}
    with running_worker("takeover", "prefork", 2, **env):
        handle = start(flows.falls_over_once)
        assert handle.wait(timeout=60) == ["ticked", "up again"]
    kills = [float(t) for t in counters_redis.lrange(flows.KILLS, 0, -1)]
    assert len(kills) == 2  # the body that killed its process, then the one that finished
    finished = Run.objects.get(id=handle.id).finished_at
    assert finished is not None
    recovery = finished.timestamp() - kills[0]
    print(f"\nrecovery after the SIGKILL of a prefork child: {recovery:.2f} s (lease 30 s)")
    assert recovery < 30  # the lease would still have held it for 30 s
    completions = Event.objects.filter(run_id=handle.id, type="step_completed").count()
    assert completions == 2  # each step completed once in the log


def test_worker_takeover_without_liveness_locks_waits_for_the_lease(counters_redis: Any) -> None:
    # Behind a pooler (FANFOLD_DATABASE_POOLED) the workers keep their default, no liveness
    # lock; straight to the database they are told to go without.
    env = {"FANFOLD_WORKFLOW_MODULES": flows.MODULE, "FANFOLD_LEASE_SECONDS": "3"}
    if not conf.get().DATABASE_POOLED:
        env["FANFOLD_LIVENESS_LOCKS"] = "off"
    with running_worker("expiry", "prefork", 2, **env):
        handle = start(flows.falls_over_once)
        assert handle.wait(timeout=90) == ["ticked", "up again"]
    assert counters_redis.llen(flows.KILLS) == 2  # killed once, then finished elsewhere
    completions = Event.objects.filter(run_id=handle.id, type="step_completed").count()
    assert completions == 2
