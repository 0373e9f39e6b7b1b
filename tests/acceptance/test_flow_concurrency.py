"""Concurrency limits and priorities on real worker processes, measured from the bodies."""

from __future__ import annotations

import json
from collections import defaultdict
from contextlib import ExitStack
from typing import Any

import pytest

from runtime import start
from runtime.models import Run
from tests.acceptance import flow_limits_workflows as flows
from tests.support.waiting import wait_until
from tests.support.workers import running_worker

pytestmark = pytest.mark.django_db(transaction=True)

ENV = {"FANFOLD_WORKFLOW_MODULES": flows.MODULE}


def max_overlap(spans: list[tuple[float, float]]) -> int:
    """The most spans open at one instant (an end before a start at the same time)."""
    edges = sorted(
        [(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans], key=lambda x: (x[0], x[1])
    )
    most = current = 0
    for _, delta in edges:
        current += delta
        most = max(most, current)
    return most


def spans(counters_redis: Any) -> dict[str, list[tuple[float, float]]]:
    by_key: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for raw in counters_redis.lrange(flows.SPANS, 0, -1):
        key, begin, end = json.loads(raw)
        by_key[key].append((begin, end))
    return by_key


def two_workers(stack: ExitStack, prefix: str) -> None:
    for i in range(2):
        stack.enter_context(running_worker(f"{prefix}-{i}", "threads", 4, **ENV))


def test_flow_concurrency_twenty_runs_on_two_workers_never_exceed_three(
    counters_redis: Any,
) -> None:
    with ExitStack() as stack:
        two_workers(stack, "capped")
        handles = [start(flows.capped, "all") for _ in range(20)]
        for handle in handles:
            assert handle.wait(timeout=90) == "all"
    measured = spans(counters_redis)["all"]
    assert len(measured) == 20
    assert max_overlap(measured) == 3  # the limit is reached, never passed


def test_flow_concurrency_limits_each_key_apart(counters_redis: Any) -> None:
    with ExitStack() as stack:
        two_workers(stack, "keyed")
        handles = [start(flows.keyed, k, concurrency_key=k) for k in "abc" * 4]
        for handle in handles:
            handle.wait(timeout=90)
    measured = spans(counters_redis)
    assert {k: len(v) for k, v in measured.items()} == {"a": 4, "b": 4, "c": 4}
    assert all(max_overlap(v) <= 2 for v in measured.values())
    every = [span for v in measured.values() for span in v]
    assert max_overlap(every) > 2  # the keys do not share their slots


def test_flow_concurrency_a_sigkilled_workers_slot_is_freed(counters_redis: Any) -> None:
    with running_worker("solo-a", "threads", 2, **ENV) as doomed:
        first = start(flows.solo, "doomed")
        wait_until(
            lambda: counters_redis.llen(flows.ORDER) >= 1, 60, message="the first body to start"
        )
        second = start(flows.solo, "next")
        assert Run.objects.get(id=second.id).admitted is False  # the one slot is taken
        doomed.kill()
    with running_worker("solo-b", "threads", 2, **ENV):
        # The crashed run's lease expires, another worker takes it over and finishes it,
        # and that frees the slot for the next run.
        assert first.wait(timeout=60) == "doomed"
        assert second.wait(timeout=60) == "next"
    order = [x.decode() for x in counters_redis.lrange(flows.ORDER, 0, -1)]
    assert order == ["doomed:start", "doomed:start", "doomed:end", "next:start", "next:end"]


def test_flow_concurrency_pending_runs_start_by_priority_then_fifo(counters_redis: Any) -> None:
    with running_worker("queue", "threads", 4, **ENV):
        blocker = start(flows.queue, "blocker")
        wait_until(
            lambda: counters_redis.llen(flows.ORDER) >= 1, 60, message="the blocker to start"
        )
        plan = [("p0", 0), ("p5-a", 5), ("p9-a", 9), ("p1", 1), ("p5-b", 5), ("p9-b", 9)]
        handles = [start(flows.queue, label, priority=p) for label, p in plan]
        counters_redis.rpush(flows.RELEASE, "go")
        blocker.wait(timeout=60)
        for handle in handles:
            handle.wait(timeout=60)
    order = [x.decode() for x in counters_redis.lrange(flows.ORDER, 0, -1)]
    assert order == ["blocker", "p9-a", "p9-b", "p5-a", "p5-b", "p1", "p0"]
