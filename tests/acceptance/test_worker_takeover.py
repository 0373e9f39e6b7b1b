"""A step that kills its own prefork worker process, with the default lease (30 s): the run
is taken over through the dead process's liveness lock in seconds, not after its lease."""

from __future__ import annotations

from typing import Any

import pytest

from runtime import start
from runtime.models import Event, Run
from tests.acceptance import recovery_workflows as flows
from tests.support.workers import running_worker

pytestmark = pytest.mark.django_db(transaction=True)

DEFAULTS = {"FANFOLD_LEASE_SECONDS": "30", "FANFOLD_SWEEP_INTERVAL": "5"}


def test_worker_takeover_a_killed_prefork_child_is_taken_over_before_its_lease_ends(
    counters_redis: Any,
) -> None:
    env = {"FANFOLD_WORKFLOW_MODULES": flows.MODULE, **DEFAULTS}
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
