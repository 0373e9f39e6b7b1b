"""A worker killed with SIGKILL mid-run: real Redis, real `celery -A config worker` processes.

Recovery comes from the lease expiring (FANFOLD_LEASE_SECONDS=2) and the surviving worker's
recovery sweep; the killed worker's message stays unacked in Redis for the whole test.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from runtime import start
from runtime.models import Event, Step
from tests.acceptance import recovery_workflows as flows
from tests.support.waiting import wait_until
from tests.support.workers import running_worker

pytestmark = pytest.mark.django_db(transaction=True)

WORKER_ENV = {"FANFOLD_WORKFLOW_MODULES": flows.MODULE}


def assert_dense_events(run_id: Any) -> list[str]:
    log = list(Event.objects.filter(run_id=run_id).order_by("seq").values_list("seq", "type"))
    assert [seq for seq, _ in log] == list(range(1, len(log) + 1))
    return [kind for _, kind in log]


def test_worker_recovery_sigkill_mid_run_finishes_on_another_worker(counters_redis: Any) -> None:
    count = 300
    with running_worker("recovery-a", "prefork", 1, **WORKER_ENV) as doomed:
        handle = start(flows.slow_loop, count)
        wait_until(
            lambda: counters_redis.llen(flows.BODIES) >= 60, 60, message="the run to get going"
        )
        doomed.kill()
    ran_before_kill = counters_redis.llen(flows.BODIES)
    assert ran_before_kill < count
    assert handle.status == "running"  # stranded until its lease expires

    with running_worker("recovery-b", "threads", 2, **WORKER_ENV):
        assert handle.wait(timeout=120) == sum(range(count))

    bodies = [int(i) for i in counters_redis.lrange(flows.BODIES, 0, -1)]
    runs_per_step = Counter(bodies)
    assert set(runs_per_step) == set(range(count))
    rerun = [i for i, n in runs_per_step.items() if n > 1]
    assert len(rerun) <= 1, f"finished steps ran again: {rerun}"  # only the interrupted one
    assert max(runs_per_step.values()) <= 2
    assert bodies == sorted(bodies)  # the second worker resumed where the first stopped
    assert len(bodies) > ran_before_kill  # and did the rest

    steps = list(Step.objects.filter(run_id=handle.id).order_by("position"))
    assert [(s.position, s.status, s.result) for s in steps] == [
        (i + 1, "completed", i) for i in range(count)
    ]
    types = assert_dense_events(handle.id)
    assert types.count("step_completed") == count
    assert types[-1] == "run_completed"


def test_worker_recovery_at_most_once_step_is_not_rerun_after_sigkill(counters_redis: Any) -> None:
    with running_worker("once-a", "threads", 2, **WORKER_ENV) as doomed:
        handle = start(flows.charge_once, "order-7")
        wait_until(
            lambda: counters_redis.llen(flows.CHARGES) >= 1, 60, message="the charge to start"
        )
        doomed.kill()

    interrupted = Step.objects.get(run_id=handle.id, position=1)
    # The start was durable before the body ran, so the crash left it visibly in flight.
    assert (interrupted.status, interrupted.attempt) == ("running", 1)

    with running_worker("once-b", "threads", 2, **WORKER_ENV):
        result = handle.wait(timeout=60)

    # Attempt 1 ran exactly once and was never run again; the policy allowed one more attempt.
    assert [int(a) for a in counters_redis.lrange(flows.CHARGES, 0, -1)] == [1, 2]
    assert result == {"order": "order-7", "attempt": 2}
    charged = Step.objects.get(run_id=handle.id, position=1)
    assert (charged.status, charged.attempt) == ("completed", 2)
    retrying = Event.objects.get(run_id=handle.id, type="step_retrying").payload
    assert (retrying["attempt"], retrying["error"]["type"]) == (1, "StepInterrupted")
    types = assert_dense_events(handle.id)
    assert types.count("step_started") == 2
