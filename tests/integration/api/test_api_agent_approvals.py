"""Durable pydantic-ai agents on a run driven by hand: steps named from the agent and
toolset, an approval asked, decided over REST (once, with `by`), and the run resumed."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from pydantic_ai import Agent, models
from pydantic_ai.exceptions import CallDeferred
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import DeferredToolRequests
from rest_framework.test import APIClient

from runtime import workflow
from runtime.agents import FanfoldApprovals, FanfoldDurability
from runtime.agents.approvals import resolve
from runtime.agents.deferred import TokenDeferredCalls
from runtime.core.clock import FakeClock
from runtime.executor import ExecutionOutcome, execute
from runtime.models import Event, Run, Step
from runtime.services import start_run
from tests.support.users import grant, operator, starter

models.ALLOW_MODEL_REQUESTS = False
MODEL_CALLS: list[int] = []
TOOL_CALLS: list[str] = []


def _two_tools_then_answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    MODEL_CALLS.append(len(messages))
    turn = sum(1 for m in messages if isinstance(m, ModelResponse))
    if turn < 2:
        return ModelResponse(parts=[ToolCallPart("lookup", {"order": turn + 1}, f"call-{turn}")])
    return ModelResponse(parts=[TextPart("both orders shipped")])


def _refund_then_answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    MODEL_CALLS.append(len(messages))
    if not any(isinstance(m, ModelResponse) for m in messages):
        return ModelResponse(parts=[ToolCallPart("refund", {"order": 7}, "call-refund")])
    last = messages[-1].parts[0]
    return ModelResponse(parts=[TextPart(f"done: {getattr(last, 'content', '')}")])


support = Agent(
    FunctionModel(_two_tools_then_answer),
    name="support",
    capabilities=[FanfoldDurability()],
)


@support.tool_plain
def lookup(order: int) -> str:
    TOOL_CALLS.append(f"lookup:{order}")
    return f"order {order} shipped"


refunds = Agent(
    FunctionModel(_refund_then_answer),
    name="refunds",
    capabilities=[FanfoldDurability(), FanfoldApprovals()],
)


@refunds.tool_plain(requires_approval=True)
def refund(order: int) -> str:
    TOOL_CALLS.append(f"refund:{order}")
    return f"refunded order {order}"


@workflow(name="tests.agents.support")
async def support_flow(ctx: Any, question: str) -> str:
    result = await support.run(question)
    return result.output


@workflow(name="tests.agents.refund")
async def refund_flow(ctx: Any, question: str) -> str:
    result = await refunds.run(question)
    return result.output


@pytest.fixture(autouse=True)
def _fresh() -> None:
    MODEL_CALLS.clear()
    TOOL_CALLS.clear()


def _names(run_id: uuid.UUID) -> list[str]:
    return list(
        Step.objects.filter(run_id=run_id).order_by("position").values_list("name", flat=True)
    )


def test_a_run_with_two_tool_calls_is_steps_named_from_the_agent_and_toolset(
    client: APIClient, clock: FakeClock
) -> None:
    run, _ = start_run("tests.agents.support", ["where are my orders?"])
    assert execute(run.id, clock=clock).outcome is ExecutionOutcome.COMPLETED
    assert Run.objects.get(id=run.id).result == "both orders shipped"
    names = [n for n in _names(run.id) if n not in ("ctx.uuid4", "ctx.now")]
    assert names == [
        "support__model.request",
        "support__function_toolset__<agent>.call_tool:lookup",
        "support__model.request",
        "support__function_toolset__<agent>.call_tool:lookup",
        "support__model.request",
    ]
    assert TOOL_CALLS == ["lookup:1", "lookup:2"]
    assert len(MODEL_CALLS) == 3


def _pending(client: APIClient, run_id: uuid.UUID) -> list[dict[str, Any]]:
    response = client.get(f"/api/runs/{run_id}/approvals/")
    assert response.status_code == 200
    return [a for a in response.json() if a["approved"] is None]


@pytest.mark.parametrize("approved", [True, False])
def test_an_approval_waits_holding_no_worker_then_resumes_with_the_decision(
    client: APIClient, clock: FakeClock, approved: bool
) -> None:
    run, _ = start_run("tests.agents.refund", ["refund order 7"])
    assert execute(run.id, clock=clock).outcome is ExecutionOutcome.SUSPENDED
    [pending] = _pending(client, run.id)
    assert (pending["tool_name"], pending["arguments"]) == ("refund", {"order": 7})
    assert TOOL_CALLS == []

    decision = {"approved": approved, "reason": None if approved else "not this one"}
    url = f"/api/runs/{run.id}/approvals/{pending['id']}/"
    response = client.post(url, decision, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["by"]["username"] == "ada"
    twice = client.post(url, decision, format="json")
    assert twice.status_code == 409
    assert twice.json()["error"]["code"] == "approval_decided"

    assert execute(run.id, clock=clock).outcome is ExecutionOutcome.COMPLETED
    result = Run.objects.get(id=run.id).result
    if approved:
        assert TOOL_CALLS == ["refund:7"]
        assert result == "done: refunded order 7"
    else:
        assert TOOL_CALLS == []
        assert result == "done: not this one"
    assert len(MODEL_CALLS) == 2  # the replay after the approval asked the model nothing again
    types = list(Event.objects.filter(run_id=run.id).values_list("type", flat=True))
    assert types.count("approval_requested") == 1 and types.count("approval_decided") == 1
    assert _pending(client, run.id) == []


def test_approvals_refuse_bad_input_and_unknown_ids(client: APIClient, clock: FakeClock) -> None:
    run, _ = start_run("tests.agents.refund", ["refund order 7"])
    execute(run.id, clock=clock)
    [pending] = _pending(client, run.id)
    url = f"/api/runs/{run.id}/approvals/{pending['id']}/"
    assert client.post(url, {"approved": "perhaps"}, format="json").status_code == 400
    assert client.post(url, {}, format="json").status_code == 400
    other = f"/api/runs/{run.id}/approvals/{uuid.uuid4()}/"
    unknown = client.post(other, {"approved": True}, format="json")
    assert unknown.status_code == 404
    assert unknown.json()["error"]["code"] == "approval_not_found"
    assert client.get(f"/api/runs/{uuid.uuid4()}/approvals/").status_code == 404


TOKENS: list[str] = []


def _hand_out(ctx: Any, requests: DeferredToolRequests, token: str) -> None:
    TOKENS.append(token)  # a real `ask` posts it to whoever will answer


def _deferred_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    if not any(isinstance(m, ModelResponse) for m in messages):
        return ModelResponse(parts=[ToolCallPart("ship", {"order": 9}, "call-ship")])
    return ModelResponse(parts=[TextPart(f"shipping: {messages[-1].parts[-1].content}")])


shipper = Agent(
    FunctionModel(_deferred_model),
    name="shipper",
    capabilities=[FanfoldDurability(), TokenDeferredCalls(_hand_out)],
)


@shipper.tool_plain
def ship(order: int) -> str:
    raise CallDeferred


@workflow(name="tests.agents.deferred")
async def deferred_flow(ctx: Any) -> str:
    return (await shipper.run("ship order 9")).output


def test_a_call_deferred_tool_waits_in_the_run_for_its_result(clock: FakeClock) -> None:
    TOKENS.clear()
    run, _ = start_run("tests.agents.deferred", [])
    assert execute(run.id, clock=clock).outcome is ExecutionOutcome.SUSPENDED
    [token] = TOKENS
    resolve(run.id, token, {"calls": {"call-ship": "label printed"}})
    assert execute(run.id, clock=clock).outcome is ExecutionOutcome.COMPLETED
    assert Run.objects.get(id=run.id).result == "shipping: label printed"
    assert [token] == TOKENS  # the replay did not ask again


def test_approvals_need_change_rights_and_hide_runs_a_user_cannot_see(
    client: APIClient, clock: FakeClock
) -> None:
    run, _ = start_run("tests.agents.refund", ["refund order 7"])
    execute(run.id, clock=clock)
    [pending] = _pending(client, run.id)
    url = f"/api/runs/{run.id}/approvals/{pending['id']}/"

    viewer = APIClient()
    viewer.force_authenticate(grant(User.objects.create_user("viewer"), "view_run"))
    assert viewer.get(f"/api/runs/{run.id}/approvals/").status_code == 200
    refused = viewer.post(url, {"approved": True}, format="json")
    assert refused.status_code == 403
    message = refused.json()["error"]["message"]
    assert message.startswith(f"deciding an approval of run {run.id} needs"), message

    stranger = APIClient()
    stranger.force_authenticate(starter("stranger"))
    assert stranger.get(f"/api/runs/{run.id}/approvals/").status_code == 404
    assert stranger.post(url, {"approved": True}, format="json").status_code == 404
    assert _pending(client, run.id) != []  # nobody decided it


def test_the_admin_shows_approve_and_deny_only_to_users_who_may_change_the_run(
    clock: FakeClock,
) -> None:
    run, _ = start_run("tests.agents.refund", ["refund order 7"])
    execute(run.id, clock=clock)
    page = reverse("admin:runtime_run_change", args=[run.id])
    staff = {"is_staff": True}
    looker = Client()
    looker.force_login(grant(User.objects.create_user("looker", **staff), "view_run"))
    seen = looker.get(page).content.decode()
    assert "Waiting for approval" in seen and "refund" in seen and ">Approve<" not in seen
    boss = Client()
    boss.force_login(operator("boss", **staff))
    assert ">Approve<" in boss.get(page).content.decode()


def test_the_admin_run_page_of_an_approval_wait_reads_consistently(clock: FakeClock) -> None:
    run, _ = start_run("tests.agents.refund", ["refund order 7"])
    execute(run.id, clock=clock)
    boss = Client()
    boss.force_login(operator("boss", is_staff=True))
    seen = boss.get(reverse("admin:runtime_run_change", args=[run.id])).content.decode()
    rows = re.findall(r'<tr class="step-row">(.*?)</tr>', seen, re.S)
    shown = [re.findall(r"<td>([a-z]+)</td>", row)[-1] for row in rows]  # kind, then status
    summary = re.search(r'<p class="fanfold-summary">(\d+ steps?: .*?)</p>', seen, re.S)
    assert summary is not None
    for status in set(shown):
        assert f"{shown.count(status)} {status}" in summary.group(1), (summary.group(1), shown)
    wait = [row for row in rows if "fanfold.approvals." in row]
    assert len(wait) == 1 and "waiting" in wait[0]
    assert "Fork from this step" not in wait[0]  # the decision could never come to a fork
    assert all("Fork from this step" in row for row in rows if row not in wait)
    offsets = [
        float(o) for o in re.findall(r'<tr class="event-row">\s*<td class="num">\d+</td>'
                                     r'<td class="num"[^>]*>([+-][\d.]+) s</td>', seen)
    ]  # fmt: skip
    assert offsets and offsets == sorted(offsets)  # in seq order, times never go back
