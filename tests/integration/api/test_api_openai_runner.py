"""The OpenAI Agents SDK on Fanfold (FanfoldRunner), on a run driven by hand: model and tool
calls as named steps, parallel tool calls positioned in the model's call order (and replayed
so), a tool needing approval decided over REST, then the run resumed. No model is called:
a scripted Model answers."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from agents import Agent, Model, ModelResponse, RunHooks, function_tool, set_tracing_disabled
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputRefusal,
    ResponseOutputText,
)
from rest_framework.test import APIClient

from runtime import workflow
from runtime.agents.live import agent_events
from runtime.agents.openai_runner import FanfoldRunner
from runtime.core.clock import FakeClock
from runtime.executor import ExecutionOutcome, execute
from runtime.models import Event, Run, Step
from runtime.services import start_run

os.environ.setdefault("OPENAI_API_KEY", "sk-offline-dummy")
set_tracing_disabled(True)
MODEL_CALLS: list[int] = []
TOOL_CALLS: list[str] = []


def _call(call_id: str, name: str, arguments: str) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        type="function_call", call_id=call_id, name=name, arguments=arguments
    )


def _text(text: str) -> ResponseOutputMessage:
    content: list[ResponseOutputText | ResponseOutputRefusal] = [
        ResponseOutputText(type="output_text", text=text, annotations=[])
    ]
    return ResponseOutputMessage(
        id="msg", type="message", role="assistant", status="completed", content=content
    )


class ScriptedModel(Model):
    """Answers turn n with script[n]; counts every call it answers."""

    def __init__(self, script: list[list[Any]]) -> None:
        self.script = script

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        turn = len(MODEL_CALLS)
        MODEL_CALLS.append(turn)
        output = self.script[turn]
        if turn == len(self.script) - 1 and TOOL_CALLS:  # the answer reports what ran
            output = [_text(" ".join(TOOL_CALLS))]
        return ModelResponse(output=output, usage=Usage(requests=1), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError


@function_tool
def lookup(order: int) -> str:
    """Where an order is."""
    TOOL_CALLS.append(f"lookup:{order}")
    return f"order {order} shipped"


@function_tool(needs_approval=True)
def refund(order: int) -> str:
    """Refund an order."""
    TOOL_CALLS.append(f"refund:{order}")
    return f"refunded order {order}"


class SlowFirstCall(RunHooks[Any]):
    """Delays the first tool call before it is invoked, so without the ordering gate the
    second call would take its step position first."""

    async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
        if getattr(context, "tool_call_id", None) == "call-a":
            await asyncio.sleep(0.05)


support = Agent(
    name="support",
    model=ScriptedModel(
        [
            [_call("call-a", "lookup", '{"order": 1}'), _call("call-b", "lookup", '{"order": 2}')],
            [_call("call-r", "refund", '{"order": 7}')],
            [_text("unused")],
        ]
    ),
    tools=[lookup, refund],
)


@workflow(name="tests.agents.openai_support")
async def support_flow(ctx: Any, question: str) -> str:
    result = await FanfoldRunner.run(support, question, hooks=SlowFirstCall())
    return str(result.final_output)


@pytest.fixture(autouse=True)
def _fresh() -> None:
    MODEL_CALLS.clear()
    TOOL_CALLS.clear()


def _names(run_id: uuid.UUID) -> list[str]:
    names = Step.objects.filter(run_id=run_id).order_by("position").values_list("name", flat=True)
    return [n for n in names if not n.startswith(("ctx.", "fanfold."))]


def _pending(client: APIClient, run_id: uuid.UUID) -> list[dict[str, Any]]:
    response = client.get(f"/api/runs/{run_id}/approvals/")
    assert response.status_code == 200
    return [a for a in response.json() if a["approved"] is None]


@pytest.mark.parametrize("approved", [True, False])
def test_steps_in_call_order_an_approval_over_rest_and_the_replay(
    client: APIClient, clock: FakeClock, approved: bool
) -> None:
    run, _ = start_run("tests.agents.openai_support", ["my orders?"])
    assert execute(run.id, clock=clock).outcome is ExecutionOutcome.SUSPENDED
    assert _names(run.id) == [
        "openai.support.model",
        "openai.support.tool.lookup",
        "openai.support.tool.lookup",
        "openai.support.model",
        "openai.support.approve.ask",
    ]
    tool_steps = Step.objects.filter(run_id=run.id, name="openai.support.tool.lookup")
    assert [s.result for s in tool_steps.order_by("position")] == [
        "order 1 shipped",
        "order 2 shipped",
    ]  # the model emitted call-a first; its slow start did not let call-b overtake it
    [pending] = _pending(client, run.id)
    assert (pending["tool_name"], pending["arguments"]) == ("refund", {"order": 7})

    decision = {"approved": approved, "reason": None if approved else "not this one"}
    url = f"/api/runs/{run.id}/approvals/{pending['id']}/"
    assert client.post(url, decision, format="json").status_code == 200
    assert client.post(url, decision, format="json").status_code == 409

    assert execute(run.id, clock=clock).outcome is ExecutionOutcome.COMPLETED
    refunds = ["refund:7"] if approved else []
    ran = ["lookup:1", "lookup:2", *refunds]
    assert ran == TOOL_CALLS  # the replay ran no tool again
    assert len(MODEL_CALLS) == 3  # nor asked the model again
    assert Run.objects.get(id=run.id).result == " ".join(TOOL_CALLS)
    assert _names(run.id)[-1] == "openai.support.model"
    types = list(Event.objects.filter(run_id=run.id).values_list("type", flat=True))
    assert types.count("approval_requested") == 1 and types.count("approval_decided") == 1
    kinds = [e["kind"] for e in agent_events(run.id)]
    assert kinds[:3] == ["tool_call", "tool_call", "tool_result"] and kinds[-1] == "final"
