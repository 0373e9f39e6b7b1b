"""The OpenAI Agents SDK on Fanfold (FanfoldRunner) on real prefork workers and PostgreSQL: a
worker SIGKILLed in the middle of an agent run, and a tool approval given or refused over
REST while the run holds no worker."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from rest_framework.test import APIClient

from runtime import start
from runtime.models import Event, Run
from tests.acceptance import agents_openai_flows as flows
from tests.support.services import wait_until
from tests.support.users import operator
from tests.support.workers import running_worker

pytestmark = pytest.mark.django_db(transaction=True)

WORKER_ENV = {"FANFOLD_WORKFLOW_MODULES": flows.MODULE}


def test_openai_sigkill_after_a_model_step_asks_the_model_each_turn_once(
    counters_redis: Any,
) -> None:
    with running_worker("agents-openai-a", "prefork", 2, **WORKER_ENV) as doomed:
        handle = start(flows.crashy_flow)
        wait_until(
            lambda: counters_redis.get(f"{flows.TOOLS}:blocked") is not None,
            60,
            "the agent to reach the blocking tool call",
        )
        doomed.kill()  # model step 3 is recorded, its tool call is in flight
    assert [int(t) for t in counters_redis.lrange(flows.MODEL, 0, -1)] == [0, 1, 2]

    with running_worker("agents-openai-b", "prefork", 2, **WORKER_ENV):
        assert handle.wait(timeout=120) == f"looked up {flows.TURNS - 1} items"

    turns = Counter(int(t) for t in counters_redis.lrange(flows.MODEL, 0, -1))
    assert turns == {turn: 1 for turn in range(flows.TURNS)}  # no model call ran twice
    tools = Counter(int(n) for n in counters_redis.lrange(flows.TOOLS, 0, -1))
    assert tools == {0: 1, 1: 1, 2: 2, 3: 1}  # only the interrupted tool call ran again


@pytest.mark.parametrize("approved", [True, False])
def test_openai_approval_over_rest_resumes_the_run_on_a_worker(
    counters_redis: Any, approved: bool
) -> None:
    api = APIClient()
    api.force_authenticate(operator("approver", password="pw-approver-1"))
    with running_worker("agents-openai-c", "prefork", 2, **WORKER_ENV):
        handle = start(flows.refund_flow)
        wait_until(lambda: handle.status == "waiting", 60, "the run to wait for its approval")
        [pending] = api.get(f"/api/runs/{handle.id}/approvals/").json()
        assert (pending["tool_name"], pending["arguments"]) == ("refund", {"order": 7})
        assert counters_redis.llen(flows.TOOLS) == 0
        url = f"/api/runs/{handle.id}/approvals/{pending['id']}/"
        decision = {"approved": approved, "reason": None if approved else "not today"}
        assert api.post(url, decision, format="json").status_code == 200
        expected = "done: refunded order 7" if approved else "done: not today"
        assert handle.wait(timeout=60) == expected

    assert counters_redis.llen(flows.MODEL) == 2
    assert counters_redis.llen(flows.TOOLS) == (1 if approved else 0)
    decided = Event.objects.get(run_id=handle.id, type="approval_decided").payload
    assert decided["by"]["username"] == "approver"
    assert Run.objects.get(id=handle.id).status == "completed"
