"""SIGKILL of a whole worker (every process of it) mid 2,000-branch fan-out, default settings.

The dead worker's running branches are taken over through its processes' liveness locks, in
seconds, though their leases (30 s) still hold: their next attempts are published, and run
when the queue's backlog reaches them. What it had reserved from the queue but not started is
republished by the fan-out sweep once the queue is empty.

The worker is killed while it runs one of the slow leaves (just begun), so that it surely
leaves a branch running; its branches are told from the survivor's by their lease owners, the
liveness keys of its processes, whose sessions it names through PGAPPNAME.
"""

from __future__ import annotations

import time
from collections import Counter
from datetime import timedelta
from typing import Any

from django.db import connection
from django.utils import timezone

from runtime import start
from runtime.models import FanoutGroup, Step
from tests.faults import fault_workflows as flows
from tests.faults.fault_checks import assert_each_step_completed_once, wait_for
from tests.support.workers import running_worker

DEFAULTS = {"FANFOLD_LEASE_SECONDS": "30", "FANFOLD_SWEEP_INTERVAL": "5"}
# The suite runs behind PgBouncer, where liveness locks are off by default: this case is theirs.
ENV = {"FANFOLD_WORKFLOW_MODULES": flows.MODULE, "FANFOLD_LIVENESS_LOCKS": "on", **DEFAULTS}
BRANCHES = 2000
DOOMED = "fanfold-fault-doomed"  # the application_name of the doomed worker's sessions

_KEYS_OF_APPLICATION = (
    "SELECT (l.classid::bigint << 32) | l.objid::bigint FROM pg_locks l "
    "JOIN pg_stat_activity a ON a.pid = l.pid "
    "WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND a.application_name = %s"
)


def _liveness_keys(application: str) -> set[int]:
    with connection.cursor() as cursor:
        cursor.execute(_KEYS_OF_APPLICATION, [application])
        return {int(key) for (key,) in cursor.fetchall()}


def _running(run_id: Any, owners: set[int]) -> dict[Any, int]:
    rows = Step.objects.filter(run_id=run_id, status="running", lease_owner__in=owners)
    return dict(rows.values_list("id", "attempt"))


def _runs_a_slow_leaf_just_begun(run_id: Any, first: int, owners: set[int]) -> bool:
    recent = timezone.now() - timedelta(seconds=flows.SLOW_SECONDS / 3)
    positions = Step.objects.filter(
        run_id=run_id, status="running", lease_owner__in=owners, started_at__gt=recent
    ).values_list("position", flat=True)
    return any(flows.is_slow(p - first) for p in positions)


def test_fault_worker_sigkill_mid_fanout_is_taken_over_in_seconds(counters_redis: Any) -> None:
    with running_worker("fault-survivor", "prefork", 2, **ENV):
        with running_worker("fault-doomed", "prefork", 2, PGAPPNAME=DOOMED, **ENV) as doomed:
            handle = start(flows.wide, BRANCHES)
            wait_for(lambda: counters_redis.llen(flows.LEAVES) >= 400, 120, "branches to run")
            owners = _liveness_keys(DOOMED)
            assert owners, "the doomed worker's processes hold no liveness lock"
            first = FanoutGroup.objects.get(run_id=handle.id).first_position
            wait_for(
                lambda: _runs_a_slow_leaf_just_begun(handle.id, first, owners),
                60,
                "the doomed worker to begin a slow leaf",
            )
            owners |= _liveness_keys(DOOMED)  # a child that took its lock since
            doomed.kill()
            killed_at = time.monotonic()
        running = _running(handle.id, owners)  # what the dead worker left running

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
        f"\nSIGKILL of a worker mid fan-out: the {len(running)} branch(es) it left running taken "
        f"over in {recovered:.2f} s (lease 30 s); the run finished {finished:.1f} s after the kill"
    )
    assert running, "the dead worker left no branch running"
    assert recovered < 30  # taken over through liveness, not after the lease
    assert_each_step_completed_once(handle.id)
    leaves = Counter(int(i) for i in counters_redis.lrange(flows.LEAVES, 0, -1))
    assert set(leaves) == set(range(BRANCHES))
    assert counters_redis.lrange(flows.CHARGES, 0, -1) == [b"wide"]
