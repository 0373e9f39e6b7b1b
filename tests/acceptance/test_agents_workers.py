"""Durable agents on real prefork workers and PostgreSQL, for both integrations alike
(pydantic-ai's FanfoldDurability and the OpenAI Agents SDK's FanfoldRunner): a worker
SIGKILLed in the middle of an agent run, and a tool approval given or refused over REST while
the run holds no worker.

Each integration's flows module (tests.acceptance.agent_flows, .agents_openai_flows) has the
same shape: `crashy_flow` looks an order up for `TURNS - 1` turns (the lookup of turn
`BLOCK_AT` blocks the first time), `refund_flow` asks for an approved refund of order 7; the
model and the tools record each execution in the Redis lists `MODEL` and `TOOLS`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import AbstractContextManager
from types import ModuleType
from typing import Any

import pytest
from rest_framework.test import APIClient

from runtime import start
from runtime.models import Event, Run
from tests.acceptance import agent_flows, agents_openai_flows
from tests.support.users import operator
from tests.support.waiting import wait_until
from tests.support.workers import running_worker

pytestmark = pytest.mark.django_db(transaction=True)

INTEGRATIONS = {"pydantic-ai": agent_flows, "openai-agents": agents_openai_flows}


class Integration:
    """One integration's flows, and prefork workers that load them."""

    def __init__(self, key: str, flows: ModuleType) -> None:
        self.key = key
        self.flows = flows

    def worker(self, suffix: str) -> AbstractContextManager[Any]:
        env = {"FANFOLD_WORKFLOW_MODULES": self.flows.MODULE}
        return running_worker(f"agents-{self.key}-{suffix}", "prefork", 2, **env)


@pytest.fixture(params=sorted(INTEGRATIONS))
def integration(request: pytest.FixtureRequest) -> Iterator[Integration]:
    yield Integration(request.param, INTEGRATIONS[request.param])


def test_agents_sigkill_after_a_model_step_asks_the_model_each_turn_once(
    integration: Integration, counters_redis: Any
) -> None:
    flows = integration.flows
    with integration.worker("a") as doomed:
        handle = start(flows.crashy_flow)
        wait_until(
            lambda: counters_redis.get(f"{flows.TOOLS}:blocked") is not None,
            60,
            message="the agent to reach the blocking tool call",
        )
        doomed.kill()  # model step 3 is recorded, its tool call is in flight
    assert [int(t) for t in counters_redis.lrange(flows.MODEL, 0, -1)] == [0, 1, 2]

    with integration.worker("b"):
        assert handle.wait(timeout=120) == f"looked up {flows.TURNS - 1} items"

    turns = Counter(int(t) for t in counters_redis.lrange(flows.MODEL, 0, -1))
    assert turns == {turn: 1 for turn in range(flows.TURNS)}  # no model request ran twice
    tools = Counter(int(n) for n in counters_redis.lrange(flows.TOOLS, 0, -1))
    assert tools == {0: 1, 1: 1, 2: 2, 3: 1}  # only the interrupted tool call ran again


@pytest.mark.parametrize("approved", [True, False], ids=["approved", "denied"])
def test_agents_approval_over_rest_resumes_the_run_on_a_worker(
    integration: Integration, counters_redis: Any, approved: bool
) -> None:
    flows = integration.flows
    api = APIClient()
    api.force_authenticate(operator("approver", password="pw-approver-1"))
    with integration.worker("c"):
        handle = start(flows.refund_flow)
        wait_until(
            lambda: handle.status == "waiting", 60, message="the run to wait for its approval"
        )
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
