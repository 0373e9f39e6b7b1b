"""Waiting with real workers: wait_for_condition's polls, callbacks recorded on time while the
run sleeps, and ctx.map over a child workflow."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

import tests.acceptance.waiting_flows as flows
from runtime import start
from runtime.core.identity import child_run_key, child_run_key_prefix
from runtime.models import Event, Run, Step
from runtime.services import post_callback
from runtime.testing import callback_token
from tests.support.waiting import wait_until
from tests.support.workers import running_worker

pytestmark = pytest.mark.django_db(transaction=True)

WORKER_ENV = {"FANFOLD_WORKFLOW_MODULES": flows.MODULE}


def log(run_id: Any) -> list[tuple[str, Any]]:
    rows = Event.objects.filter(run_id=run_id).order_by("seq").values_list("type", "created_at")
    return list(rows)


def at(events: list[tuple[str, Any]], kind: str) -> Any:
    return next(created for type_, created in events if type_ == kind)


def test_waiting_condition_met_on_fifth_poll_is_one_step(counters_redis: Any) -> None:
    with running_worker("condition", "threads", 2, **WORKER_ENV):
        run = start(flows.condition, 5)
        assert run.wait(timeout=60) == {"polls": 5}
    steps = list(Step.objects.filter(run_id=run.id))
    assert [(s.name, s.status, s.attempt) for s in steps] == [
        ("tests.waiting.poll_counter", "completed", 5)
    ]
    assert int(counters_redis.get(flows.POLLS)) == 5
    types = [kind for kind, _ in log(run.id)]
    assert types.count("step_retrying") == 4
    assert types[-1] == "run_completed"


def test_waiting_callback_timeout_during_sleep_is_recorded_in_time(counters_redis: Any) -> None:
    with running_worker("cb-timeout", "threads", 2, **WORKER_ENV):
        run = start(flows.cb_in_sleep, 1.0, 3.0)
        assert run.wait(timeout=60) == {"timed_out": True}
    events = log(run.id)
    types = [kind for kind, _ in events]
    assert types.index("callback_timed_out") < types.index("wait_completed")
    late = at(events, "callback_timed_out") - at(events, "callback_created")
    assert timedelta(seconds=1) <= late < timedelta(seconds=2.5)  # not at the sleep's end (3 s)
    assert [created for _, created in events] == sorted(created for _, created in events)


def test_waiting_callback_answered_during_sleep_is_recorded_in_time(counters_redis: Any) -> None:
    with running_worker("cb-answer", "threads", 2, **WORKER_ENV):
        run = start(flows.cb_in_sleep, 60.0, 2.0)
        wait_until(
            lambda: Step.objects.filter(run_id=run.id, kind="sleep").exists(), 30, message="sleep"
        )
        token = callback_token(run.id)
        assert token
        post_callback(token, result="approved")
        assert run.wait(timeout=60) == {"answer": "approved"}
    events = log(run.id)
    types = [kind for kind, _ in events]
    assert types.index("callback_received") < types.index("wait_completed")
    assert [created for _, created in events] == sorted(created for _, created in events)


def test_waiting_map_over_child_workflow_runs_one_child_per_item(counters_redis: Any) -> None:
    with running_worker("map", "threads", 4, **WORKER_ENV):
        run = start(flows.map_children, [1, 2, 3, 4, 5])
        assert run.wait(timeout=90) == [10, 20, {"failed": "ChildFailed"}, 40, 50]
    children = Run.objects.filter(idempotency_key__startswith=child_run_key_prefix(run.id))
    assert sorted(c.input["args"][0] for c in children) == [1, 2, 3, 4, 5]
    assert max(int(n) for n in counters_redis.lrange(flows.OVERLAP, 0, -1)) <= 2  # max_concurrency
    kinds = set(Step.objects.filter(run_id=run.id).values_list("kind", flat=True))
    assert kinds == {"child"}


def test_waiting_map_over_child_workflow_completion_rules(counters_redis: Any) -> None:
    with running_worker("map-rules", "threads", 4, **WORKER_ENV):
        strict = start(flows.map_children_strict, [1, 3, 5])
        assert strict.wait(timeout=90) == {"failed": 2, "type": "ChildFailed"}
        quorum = start(flows.map_children_quorum, [1, 2, 100])
        assert quorum.wait(timeout=90) == [10, 20, {"failed": "BranchCancelled"}]
        slow = Run.objects.get(idempotency_key=child_run_key(quorum.id, 3))
        # Its branch was let go when two children had succeeded: the child stops too.
        wait_until(lambda: Run.objects.get(id=slow.id).status == "cancelled", 30, message="cancel")
