"""Durable pydantic-ai agents on a run driven by hand: steps named from the agent and
toolset, an approval asked, decided over REST (once, with `by`), and the run resumed."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

import pytest
from pydantic_ai import Agent, models
from pydantic_ai.capabilities import RequestInput
from pydantic_ai.exceptions import CallDeferred
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import DeferredToolRequests
from rest_framework.test import APIClient

from runtime import RetryableError, step, workflow
from runtime.agents import FanfoldApprovals, FanfoldDurability
from runtime.agents.approvals import resolve
from runtime.agents.live import agent_events, mark_superseded
from runtime.core.clock import FakeClock
from runtime.executor import ExecutionOutcome, execute
from runtime.models import Event, Run, Step
from runtime.services import start_run

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
    assert client.post(url, decision, format="json").status_code == 409

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
    assert client.post(other, {"approved": True}, format="json").status_code == 404
    assert client.get(f"/api/runs/{uuid.uuid4()}/approvals/").status_code == 404


def test_live_events_follow_the_steps_in_order(client: APIClient, clock: FakeClock) -> None:
    run, _ = start_run("tests.agents.support", ["where are my orders?"])
    execute(run.id, clock=clock)
    events = list(agent_events(run.id))
    assert [e["kind"] for e in events] == [
        "tool_call", "tool_result", "tool_call", "tool_result", "text_delta", "final",
    ]  # fmt: skip
    assert [e["step"] for e in events] == sorted(e["step"] for e in events)
    assert events[1]["tool_name"] == "lookup" and not any(e["superseded"] for e in events)
    assert events[-1]["text"] == "both orders shipped"


FLAKY: list[int] = []


def _fails_once(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    FLAKY.append(1)
    if len(FLAKY) == 1:
        raise RetryableError("the provider is busy")
    return ModelResponse(parts=[TextPart("hello")])


flaky = Agent(FunctionModel(_fails_once), name="flaky", capabilities=[FanfoldDurability()])


@workflow(name="tests.agents.flaky")
async def flaky_flow(ctx: Any) -> str:
    return (await flaky.run("hi")).output


def test_a_retried_model_step_streams_its_events_once(client: APIClient, clock: FakeClock) -> None:
    FLAKY.clear()
    run, _ = start_run("tests.agents.flaky", [])
    while (outcome := execute(run.id, clock=clock).outcome) is not ExecutionOutcome.COMPLETED:
        assert outcome is ExecutionOutcome.SUSPENDED
        clock.advance(60)
    assert len(FLAKY) == 2
    events = list(agent_events(run.id))
    assert [(e["kind"], e["attempt"]) for e in events] == [("text_delta", 2), ("final", 2)]


def test_the_reader_marks_a_superseded_attempts_events() -> None:
    events = [
        {"step": 3, "attempt": 1, "kind": "text_delta", "text": "Hel"},
        {"step": 3, "attempt": 2, "kind": "text_delta", "text": "Hello"},
        {"step": 3, "attempt": 2, "kind": "final", "text": "Hello"},
        {"step": 4, "attempt": 1, "kind": "tool_result", "result": 1},
    ]
    assert [e["superseded"] for e in mark_superseded(events)] == [True, False, False, False]


PIECE = 512 * 1024


@step(name="tests.agents.history_piece")
def history_piece(i: int) -> str:
    return str(i) * PIECE  # over the offload threshold: kept out of the row


def _measures(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    size = sum(len(str(getattr(p, "content", ""))) for m in messages for p in m.parts)
    return ModelResponse(parts=[TextPart(f"{size} characters")])


measurer = Agent(FunctionModel(_measures), name="measurer", capabilities=[FanfoldDurability()])


@workflow(name="tests.agents.long_history")
async def long_history(ctx: Any) -> str:
    pieces = [await ctx.step(history_piece, i) for i in range(4)]
    history: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart(p)]) for p in pieces]
    history.append(ModelResponse(parts=[TextPart("noted")]))
    return (await measurer.run("how long?", message_history=history)).output


def test_a_two_megabyte_history_does_not_fail_the_run(client: APIClient, clock: FakeClock) -> None:
    run, _ = start_run("tests.agents.long_history", [])
    assert execute(run.id, clock=clock).outcome is ExecutionOutcome.COMPLETED
    expected = 4 * PIECE + len("noted") + len("how long?")
    assert Run.objects.get(id=run.id).result == f"{expected} characters"
    assert _names(run.id)[-1] == "measurer__model.request"


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
    capabilities=[FanfoldDurability(), RequestInput(ask=_hand_out)],
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


async def _streams(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
    for word in ("Hello", " there"):
        yield word


async def _ignore(ctx: Any, events: AsyncIterable[Any]) -> None:
    async for _ in events:
        pass


streamer = Agent(
    FunctionModel(stream_function=_streams),
    name="streamer",
    capabilities=[FanfoldDurability(event_stream_handler=_ignore)],
)


@workflow(name="tests.agents.streaming")
async def streaming_flow(ctx: Any) -> str:
    return (await streamer.run("hi")).output


def test_a_streamed_model_request_is_one_step_and_streams_its_text(clock: FakeClock) -> None:
    run, _ = start_run("tests.agents.streaming", [])
    assert execute(run.id, clock=clock).outcome is ExecutionOutcome.COMPLETED
    assert Run.objects.get(id=run.id).result == "Hello there"
    assert "streamer__model.request_stream" in _names(run.id)
    events = list(agent_events(run.id))
    assert [(e["kind"], e.get("text")) for e in events] == [
        ("text_delta", "Hello there"),
        ("final", "Hello there"),
    ]
