"""SIGKILL of a whole worker (every process of it) mid 2,000-branch fan-out, default settings.

The dead worker's running branches are taken over through its processes' liveness locks, in
seconds, though their leases (30 s) still hold: their next attempts are published, and run
when the queue's backlog reaches them. What it had reserved from the queue but not started is
republished by the fan-out sweep once the queue is empty.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from django.utils import timezone

from runtime import start
from runtime.models import Step
from tests.faults import fault_workflows as flows
from tests.faults.fault_checks import assert_each_step_completed_once, wait_for
from tests.support.workers import running_worker

DEFAULTS = {"FANFOLD_LEASE_SECONDS": "30", "FANFOLD_SWEEP_INTERVAL": "5"}
ENV = {"FANFOLD_WORKFLOW_MODULES": flows.MODULE, **DEFAULTS}
BRANCHES = 2000


def test_fault_worker_sigkill_mid_fanout_is_taken_over_in_seconds(counters_redis: Any) -> None:
    with running_worker("fault-survivor", "prefork", 2, **ENV):
        with running_worker("fault-doomed", "prefork", 2, **ENV) as doomed:
            handle = start(flows.wide, BRANCHES)
            wait_for(lambda: counters_redis.llen(flows.LEAVES) >= 400, 120, "branches to run")
            doomed.kill()
            killed_at = time.monotonic()
        running = dict(
            Step.objects.filter(run_id=handle.id, status="running").values_list("id", "attempt")
        )

        def taken_over() -> bool:
            # Its lease ended (the next attempt is published, queued behind the fan-out's
            # backlog), or the next attempt already runs, or it finished.
            left = Step.objects.filter(id__in=list(running), status="running")
            now = timezone.now()
            return all(
                attempt > running[sid] or (lease is not None and lease <= now)
                for sid, attempt, lease in left.values_list("id", "attempt", "wake_at")
            )

        recovered = wait_for(taken_over, 60, "the dead worker's branches to be taken over")
        assert handle.wait(timeout=180) == sum(range(BRANCHES))
        finished = time.monotonic() - killed_at
    print(
        f"\nSIGKILL of a worker mid fan-out: its {len(running)} running branches taken over "
        f"in {recovered:.2f} s (lease 30 s); the run finished {finished:.1f} s after the kill"
    )
    assert recovered < 30  # taken over through liveness, not after the lease
    assert_each_step_completed_once(handle.id)
    leaves = Counter(int(i) for i in counters_redis.lrange(flows.LEAVES, 0, -1))
    assert set(leaves) == set(range(BRANCHES))
    assert counters_redis.lrange(flows.CHARGES, 0, -1) == [b"wide"]
