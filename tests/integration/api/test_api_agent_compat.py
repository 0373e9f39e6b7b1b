"""pydantic-ai's compatibility expectations of a durability engine, met by FanfoldDurability.

pydantic-ai pins, for every engine, the journal's operation names and the sequence in which an
agent run reaches them (an agent `compat` on `TestModel` with a function toolset `functions`,
a dynamic toolset `dynamic`, a capability with a durable operation and an event stream
handler, asked to "Call every tool"), and the JSON its codec records for a model response and
a tool's return. Here the same scenario runs inside a Fanfold workflow: the steps it records
must be those names in that order, and their results those payloads.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterable
from typing import Any

from pydantic_ai import Agent, FunctionToolset, ModelResponse, RunContext, models
from pydantic_ai.capabilities import AbstractCapability, durable_operation
from pydantic_ai.durable_exec import JSON_CODEC
from pydantic_ai.models.test import TestModel
from pydantic_ai.toolsets._dynamic import DynamicToolset

from runtime import workflow
from runtime.agents import FanfoldDurability
from runtime.core.clock import FakeClock
from runtime.executor import ExecutionOutcome, execute
from runtime.models import Run, Step
from runtime.services import start_run

models.ALLOW_MODEL_REQUESTS = False

# The journal names pydantic-ai expects of this run, in the order it reaches them. Its pinned
# sequence runs the two tool calls in parallel (both calls, then both tools' events); Fanfold
# is a sequence-keyed engine and declares `sequential_tools_in_durable_context`, the spec's
# switch for such engines, so each call's event handling follows that call.
EXPECTED_STEPS = [
    "compat__dynamic_toolset__dynamic.get_tools",
    "compat__model.request_stream",
    "compat__event_stream_handler",
    "compat__event_stream_handler",
    "compat__function_toolset__functions.call_tool:function_tool",
    "compat__event_stream_handler",
    "compat__dynamic_toolset__dynamic.call_tool:dynamic_tool",
    "compat__event_stream_handler",
    "compat__dynamic_toolset__dynamic.get_tools",
    "compat__model.request_stream",
]
# Every name pydantic-ai pins for the journal convention (of agent `compat`).
JOURNAL_NAMES = {
    "compat__model.request", "compat__model.request.registered", "compat__model.request_stream",
    "compat__model.request_stream.registered", "compat__model.cancel_suspended_response",
    "compat__model.cancel_suspended_response.registered", "compat__model.compact_messages",
    "compat__model.compact_messages.registered", "compat__event_stream_handler",
    "compat__function_toolset__functions.call_tool:function_tool",
    "compat__function_toolset__functions.validate_args", "compat__mcp_server__mcp.get_tools",
    "compat__mcp_server__mcp.get_instructions", "compat__mcp_server__mcp.call_tool",
    "compat__dynamic_toolset__dynamic.get_tools",
    "compat__dynamic_toolset__dynamic.call_tool:dynamic_tool",
    "compat__dynamic_toolset__dynamic.validate_args", "compat__capability__compat.operation",
}  # fmt: skip
# The fields of a model response in pydantic-ai's JSON codec (its golden payload).
RESPONSE_FIELDS = {
    "parts", "usage", "model_name", "timestamp", "kind", "provider_name", "provider_url",
    "provider_details", "provider_response_id", "finish_reason", "run_id", "conversation_id",
    "metadata", "state",
}  # fmt: skip
USAGE_FIELDS = {
    "input_tokens", "cache_write_tokens", "cache_read_tokens", "output_tokens",
    "input_audio_tokens", "cache_audio_read_tokens", "output_audio_tokens", "details", "cost",
}  # fmt: skip


class Operations(AbstractCapability[Any]):
    """A capability with a durable operation the run never calls: it names no step."""

    id = "compat"

    @durable_operation("operation")
    async def operation(self, ctx: RunContext[Any]) -> None:
        pass


async def function_tool() -> str:
    return "function"


async def dynamic_tool() -> str:
    return "dynamic"


async def read_events(ctx: RunContext[Any], events: AsyncIterable[Any]) -> None:
    async for _ in events:
        pass


compat = Agent(
    TestModel(),
    name="compat",
    toolsets=[
        FunctionToolset(tools=[function_tool], id="functions"),
        DynamicToolset(lambda _: FunctionToolset(tools=[dynamic_tool]), id="dynamic"),
    ],
    capabilities=[Operations(), FanfoldDurability(event_stream_handler=read_events)],
)


@workflow(name="tests.agents.compat")
async def compat_flow(ctx: Any) -> str:
    return (await compat.run("Call every tool")).output


def _steps(run_id: uuid.UUID) -> list[Step]:
    return list(Step.objects.filter(run_id=run_id).order_by("position"))


def _run_compat(clock: FakeClock) -> uuid.UUID:
    run, _ = start_run("tests.agents.compat", [])
    assert execute(run.id, clock=clock).outcome is ExecutionOutcome.COMPLETED
    return run.id


def test_compat_scenario_records_pydantic_ais_step_names_in_its_order(clock: FakeClock) -> None:
    run_id = _run_compat(clock)
    assert (
        Run.objects.get(id=run_id).result == '{"function_tool":"function","dynamic_tool":"dynamic"}'
    )
    names = [s.name for s in _steps(run_id)]
    assert names == EXPECTED_STEPS
    assert set(names) <= JOURNAL_NAMES
    assert all(s.status == "completed" and s.attempt == 1 for s in _steps(run_id))


def test_compat_scenario_records_pydantic_ais_json_payloads(clock: FakeClock) -> None:
    steps = {s.name: s for s in _steps(_run_compat(clock))}
    assert steps["compat__function_toolset__functions.call_tool:function_tool"].result == {
        "result": "function",
        "kind": "tool_return",
    }
    assert steps["compat__dynamic_toolset__dynamic.call_tool:dynamic_tool"].result == {
        "result": "dynamic",
        "kind": "tool_return",
    }
    response = steps["compat__model.request_stream"].result  # the last request: the answer
    # pydantic-ai's golden fields (the installed release may add more), and exactly what its
    # codec writes for the response it reads back.
    assert set(response) >= RESPONSE_FIELDS
    assert set(response["usage"]) >= USAGE_FIELDS
    assert JSON_CODEC.dump(ModelResponse, JSON_CODEC.load(ModelResponse, response)) == response
    assert response["kind"] == "response" and response["state"] == "complete"
    [part] = response["parts"]
    assert part["part_kind"] == "text"
    assert part["content"] == '{"function_tool":"function","dynamic_tool":"dynamic"}'
