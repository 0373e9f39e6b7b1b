"""Priorities order fan-out branches on a real worker, on Redis and on RabbitMQ alike.

Runs of three priorities are started while no worker runs, lowest first; then one worker with
a single thread takes the queue one message at a time. Each run's first pass publishes its
branches at the run's priority, so every branch of a higher-priority run goes before the rest.
In start order (FIFO) every low run's branches would come first.
"""

from __future__ import annotations

from typing import Any

import pytest

from runtime import start
from tests.acceptance import flow_limits_workflows as flows
from tests.support.workers import running_worker

pytestmark = pytest.mark.django_db(transaction=True)

BRANCHES = 4


def test_flow_priority_orders_branches_of_runs_fanning_out_at_once(counters_redis: Any) -> None:
    starts = [("low", 0), ("low", 0), ("mid", 5), ("high", 9)]
    handles = [start(flows.fan, label, BRANCHES, priority=p) for label, p in starts]
    with running_worker("prio", "threads", 1, FANFOLD_WORKFLOW_MODULES=flows.MODULE):
        results = [h.wait(timeout=90) for h in handles]
    assert results[3] == [f"high{i}" for i in range(BRANCHES)]
    order = [raw.decode() for raw in counters_redis.lrange(flows.FANNED, 0, -1)]
    assert order == ["high"] * BRANCHES + ["mid"] * BRANCHES + ["low"] * 2 * BRANCHES
