"""A fan-out that outlasts its grace on a slow worker: the sweep must not republish what still
waits in the queue. Every branch the worker takes from a message is counted (bench.counting's
signals, as `bench fanout` counts them) and compared with the branches."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from bench import counting
from runtime import RunHandle, start
from runtime.models import Event
from tests.acceptance import fanout_flows as flows
from tests.support.services import counters_url
from tests.support.workers import running_worker

pytestmark = [pytest.mark.django_db(transaction=True)]

BRANCHES = 300
PAUSE = 0.03  # seconds per body: about 5 s of bodies on two processes, past the 4 s grace


def test_fanout_backlog_on_a_slow_worker_is_consumed_once(
    counters_redis: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(counting.ENV, counters_url())
    counting.client.cache_clear()
    counting.reset()
    env = {"FANFOLD_WORKFLOW_MODULES": flows.MODULE, counting.ENV: counters_url()}
    with running_worker("backlog", pool="prefork", concurrency=2, **env):
        handle: RunHandle = start(flows.marks, BRANCHES, PAUSE)
        assert handle.wait(timeout=120) == {
            "count": BRANCHES,
            "sum": sum(2 * i for i in range(BRANCHES)),
            "ordered": True,
        }
    consumed = counting.consumed().get(counting.BRANCHES, 0)  # counted as each message ends

    # Before the sweep knew a waiting message from a lost one, every pass past the grace sent
    # each queued branch again. A few duplicates may come from a prefetch; a backlog may not.
    assert BRANCHES <= consumed <= BRANCHES * 1.05
    completed = Counter(
        Event.objects.filter(run_id=handle.id, type="step_completed").values_list(
            "step_id", flat=True
        )
    )
    assert len(completed) == BRANCHES and set(completed.values()) == {1}
