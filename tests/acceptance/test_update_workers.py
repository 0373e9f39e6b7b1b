"""An update whose worker is SIGKILLed between `update_received` and `update_replied` (a real
prefork worker on PostgreSQL, on each broker): the run is taken over and answers the update
exactly once, and the caller, still waiting, gets the reply."""

from __future__ import annotations

from typing import Any

import pytest

from runtime import get_run, start
from runtime.models import Event, RunUpdate
from tests.acceptance import update_flows as flows
from tests.support.workers import running_worker

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.broker]

ENV = {
    "FANFOLD_WORKFLOW_MODULES": flows.MODULE,
    "FANFOLD_LEASE_SECONDS": "30",
    "FANFOLD_SWEEP_INTERVAL": "5",
    "FANFOLD_LIVENESS_LOCKS": "on",  # taken over in seconds, not after the lease
}


def _count(run_id: Any, kind: str) -> int:
    return Event.objects.filter(run_id=run_id, type=kind).count()


def test_update_worker_killed_between_receipt_and_reply_answers_once(
    counters_redis: Any,
) -> None:
    with running_worker("updates", "prefork", 2, **ENV):
        handle = start(flows.order)
        run = get_run(handle.id)
        reply = run.update("reserve", {"sku": "A1"}, update_id="first", timeout=90)
        assert reply == {"reserved": "reserved A1", "count": 1}
        assert counters_redis.llen(flows.KILLS) == 2  # killed once, then run again
        # The next update goes on from the recorded history.
        again = run.update("reserve", {"sku": "B2"}, timeout=30)
        assert again == {"reserved": "reserved B2", "count": 2}
        assert run.update("close", None, timeout=30) == ["reserved A1", "reserved B2"]
        assert handle.wait(timeout=30) == ["reserved A1", "reserved B2"]
    assert _count(handle.id, "update_received") == 3
    assert _count(handle.id, "update_replied") == 3  # each answered exactly once
    first = RunUpdate.objects.get(run_id=handle.id, update_id="first")
    assert (first.status, first.reply) == ("replied", {"reserved": "reserved A1", "count": 1})
    assert first.answered_position is not None
    assert _count(handle.id, "step_completed") >= 2
