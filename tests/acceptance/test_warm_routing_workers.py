"""Resumes routed to the worker node that keeps the run parked (runtime.warm.routing), on two
real prefork worker nodes of one process each: every resume of a run lands on the node that
parked it, so the run's code starts once however many messages it takes. Sent to any worker,
about half of them would land on the other node and replay there."""

from __future__ import annotations

import socket
from collections import Counter
from typing import Any

import pytest

from runtime import send, start
from runtime.models import Run
from runtime.warm.routing import node_queue_name
from tests.acceptance import messaging_flows as flows
from tests.support.waiting import wait_until
from tests.support.workers import running_worker

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

# A generous route wait: this test is of the routing, not of the fall-back (a node busy past
# the wait on a loaded machine would let the sweep send its resumes to any worker).
ENV = {"FANFOLD_WORKFLOW_MODULES": flows.MODULE, "FANFOLD_WARM_ROUTE_SECONDS": "30"}
RUNS = 20
MESSAGES = 5


def _taken(run_ids: list[Any], messages: int) -> bool:
    """Whether every run has taken `messages` messages and waits (or has completed)."""
    rows = Run.objects.filter(id__in=run_ids)
    return all(
        run.status == "completed" or (run.status == "waiting" and _received(run) == messages)
        for run in rows
    )


def _received(run: Run) -> int:
    return run.messages.filter(received_position__isnull=False).count()


def test_resumes_go_to_the_node_that_keeps_the_run_parked(counters_redis: Any) -> None:
    with (
        running_worker("warm-a", "prefork", 1, **ENV),
        running_worker("warm-b", "prefork", 1, **ENV),
    ):
        run_ids = [start(flows.chat, MESSAGES).id for _ in range(RUNS)]
        wait_until(lambda: _taken(run_ids, 0), 60, message="every run waiting")
        routes = Counter(Run.objects.filter(id__in=run_ids).values_list("warm_queue", flat=True))
        nodes = {node_queue_name(f"warm-{x}@{socket.gethostname()}") for x in "ab"}
        assert set(routes) <= nodes, routes  # each run parked on the node that started it
        for number in range(1, MESSAGES + 1):
            for run_id in run_ids:
                send(run_id, "m", number)
            wait_until(lambda n=number: _taken(run_ids, n), 60, message=f"message {number}")
        wait_until(
            lambda: Run.objects.filter(id__in=run_ids, status="completed").count() == RUNS,
            60,
            message="every run completed",
        )
    starts = Counter(s.decode() for s in counters_redis.lrange(flows.STARTS, 0, -1))
    resumes = RUNS * MESSAGES
    replays = sum(starts.values()) - RUNS
    print(f"\n{resumes} resumes on two nodes: {replays} replayed; parked on {dict(routes)}")
    assert all(
        Run.objects.get(id=run_id).result == sum(range(1, MESSAGES + 1)) for run_id in run_ids
    )
    # Sent to any worker instead (FANFOLD_WARM_ROUTE_SECONDS=0), 20 of the 100 replayed here;
    # routed, none did. A little room for a node the machine stalled past the route's wait.
    assert replays <= resumes // 20, starts
