"""Durable pydantic-ai agents, their live events and their histories, on runs driven by hand:
events in step order, once after a retried model step, superseded attempts marked, a streamed
model request, a 2 MB message history."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

from pydantic_ai import Agent, models
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from rest_framework.test import APIClient

from runtime import RetryableError, step, workflow
from runtime.agents import FanfoldDurability
from runtime.agents.live import agent_events, mark_superseded
from runtime.core.clock import FakeClock
from runtime.executor import ExecutionOutcome, execute
from runtime.models import Run, Step
from runtime.services import start_run

models.ALLOW_MODEL_REQUESTS = False


def _two_lookups(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    turn = sum(1 for m in messages if isinstance(m, ModelResponse))
    if turn < 2:
        return ModelResponse(parts=[ToolCallPart("lookup", {"order": turn + 1}, f"call-{turn}")])
    return ModelResponse(parts=[TextPart("both orders shipped")])


tracker = Agent(FunctionModel(_two_lookups), name="tracker", capabilities=[FanfoldDurability()])


@tracker.tool_plain
def lookup(order: int) -> str:
    return f"order {order} shipped"


@workflow(name="tests.agents.tracker")
async def tracker_flow(ctx: Any) -> str:
    return (await tracker.run("where are my orders?")).output


def _names(run_id: uuid.UUID) -> list[str]:
    rows = Step.objects.filter(run_id=run_id).order_by("position")
    return list(rows.values_list("name", flat=True))


def test_live_events_follow_the_steps_in_order(client: APIClient, clock: FakeClock) -> None:
    run, _ = start_run("tests.agents.tracker", [])
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
