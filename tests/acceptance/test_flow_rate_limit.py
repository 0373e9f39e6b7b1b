"""A global rate limit on real worker processes: 200 bodies of a "20/s" step on two workers."""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

import pytest

from runtime import start
from tests.acceptance import flow_limits_workflows as flows
from tests.support.workers import running_worker

pytestmark = pytest.mark.django_db(transaction=True)

# Turns are exactly 50 ms apart, and a body starts within 50 ms of its turn (one that would
# start later takes a new turn: runtime.flow.ratelimit.LATE). A window of 1 s can then hold
# the starts of the turns of 1.05 s, plus the window's edge: 22. So we allow 2 bodies over the
# rate in any 1 s window, no more.
# Each worker has 8 threads: the last fraction of a second before a turn is waited out in a
# pool thread, and a pool with none spare would delay the resumes queued behind it.
TOLERANCE = 2


def test_flow_rate_limit_spaces_bodies_across_workers(counters_redis: Any) -> None:
    with ExitStack() as stack:
        for i in range(2):
            stack.enter_context(
                running_worker(f"paced-{i}", "threads", 8, FANFOLD_WORKFLOW_MODULES=flows.MODULE)
            )
        handles = [start(flows.paced_once, i) for i in range(200)]
        assert sorted(h.wait(timeout=120) for h in handles) == list(range(200))
    starts = sorted(float(x) for x in counters_redis.lrange(flows.PACED, 0, -1))
    assert len(starts) == 200
    # 200 turns at 20/s: the last one 9.95 s after the first.
    took = starts[-1] - starts[0]
    assert 9.5 <= took <= 13.0, f"200 bodies took {took:.2f} s"
    busiest = max(sum(1 for t in starts[i:] if t < begin + 1.0) for i, begin in enumerate(starts))
    assert busiest <= 20 + TOLERANCE, f"{busiest} bodies started within one second"
