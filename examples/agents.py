"""The demo's agent: a support agent whose refund tool needs a person's approval.

The model is pydantic-ai's `FunctionModel`, scripted, so the demo calls no model provider:
it looks the order up, asks to refund it, and reports what happened.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from runtime import workflow
from runtime.agents import FanfoldApprovals, FanfoldDurability


def scripted_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Look the order up, then refund it, then say how it went."""
    turn = sum(1 for m in messages if isinstance(m, ModelResponse))
    if turn == 0:
        return ModelResponse(parts=[ToolCallPart("order_status", {"order": 1042}, "call-status")])
    if turn == 1:
        return ModelResponse(parts=[ToolCallPart("refund", {"order": 1042}, "call-refund")])
    last = messages[-1].parts[-1]
    said = last.content if isinstance(last, ToolReturnPart) else getattr(last, "content", "")
    return ModelResponse(parts=[TextPart(f"Order 1042: {said}")])


support = Agent(
    FunctionModel(scripted_model),
    name="support",
    capabilities=[FanfoldDurability(), FanfoldApprovals()],
)


@support.tool_plain
def order_status(order: int) -> str:
    """Where the order is."""
    return f"order {order} arrived damaged"


@support.tool_plain(requires_approval=True)
def refund(order: int) -> str:
    """Refund the order (a person approves it first)."""
    return f"refunded order {order}"


@workflow(name="examples.support_agent")
async def support_agent(ctx: Any, question: str) -> str:
    """One durable agent run: model requests and tools are steps; the refund waits for a
    person's approval, holding no worker."""
    result = await support.run(question)
    return str(result.output)
