"""A worker killed with SIGKILL in the middle of a 500-branch fan-out.

The killed worker's messages stay unacked in Redis for the broker's visibility timeout; the
survivor's fan-out sweep takes over branches whose lease expired (FANFOLD_LEASE_SECONDS=2) and
republishes those whose message is overdue. Branches leave ten a message (chunks), so the kill
lands in the middle of chunks: their unstarted branches must come back too.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from runtime import start
from runtime.models import Event, Run, Step
from tests.acceptance import fanout_flows as flows
from tests.support.waiting import wait_until
from tests.support.workers import running_worker

pytestmark = pytest.mark.django_db(transaction=True)

WORKER_ENV = {"FANFOLD_WORKFLOW_MODULES": flows.MODULE}
N = 500


def test_fanout_sigkill_mid_fanout_completes_every_step_once(counters_redis: Any) -> None:
    with running_worker("fanout-doomed", "threads", 4, **WORKER_ENV) as doomed:
        handle = start(flows.marks, N, 0.01)
        wait_until(lambda: counters_redis.llen(flows.BODIES) >= 100, 60, message="branches to run")
        doomed.kill()
    ran_before_kill = counters_redis.llen(flows.BODIES)
    assert ran_before_kill < N

    with running_worker("fanout-survivor", "threads", 4, **WORKER_ENV):
        result = handle.wait(timeout=60)
    assert result == {"count": N, "sum": sum(2 * i for i in range(N)), "ordered": True}

    completed = Counter(
        Event.objects.filter(run_id=handle.id, type="step_completed").values_list("step", flat=True)
    )
    assert len(completed) == N and set(completed.values()) == {1}
    statuses = Counter(Step.objects.filter(run_id=handle.id).values_list("status", flat=True))
    assert statuses == {"completed": N}
    bodies = Counter(int(i) for i in counters_redis.lrange(flows.BODIES, 0, -1))
    assert set(bodies) == set(range(N))
    assert sum(n - 1 for n in bodies.values()) <= 8  # only interrupted bodies ran again
    log = list(Event.objects.filter(run_id=handle.id).order_by("seq").values_list("seq", flat=True))
    assert log == list(range(1, len(log) + 1))
    assert Run.objects.get(id=handle.id).wakeups == 1
