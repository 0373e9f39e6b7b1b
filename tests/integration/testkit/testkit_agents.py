"""Agent workflows on the test kit's scripted models (pydantic-ai and the OpenAI Agents SDK)."""

from __future__ import annotations

import os
from typing import Any

from agents import Agent as SdkAgent
from agents import function_tool, set_tracing_disabled
from pydantic_ai import Agent, models

from runtime import workflow
from runtime.agents import FanfoldApprovals, FanfoldDurability
from runtime.agents.openai_runner import FanfoldRunner
from runtime.testing.agents import ScriptedAgentsModel, ScriptedModel, ToolCall

models.ALLOW_MODEL_REQUESTS = False
os.environ.setdefault("OPENAI_API_KEY", "sk-offline-dummy")
set_tracing_disabled(True)


def said_by_tools(messages: Any) -> str:
    """The third reply: the text of what the refund tool returned (or why it was denied)."""
    return f"Done: {messages[-1].parts[-1].content}"


support_model = ScriptedModel(
    [
        [ToolCall("order_status", {"order": 7}), ToolCall("order_status", {"order": 8})],
        ToolCall("refund", {"order": 7}),
        said_by_tools,
    ]
)
support = Agent(
    support_model, name="testkit_support", capabilities=[FanfoldDurability(), FanfoldApprovals()]
)


@support.tool_plain
def order_status(order: int) -> str:
    return f"order {order} arrived damaged"


@support.tool_plain(requires_approval=True)
def refund(order: int) -> str:
    return f"refunded order {order}"


@workflow(name="testkit.agent_support")
async def agent_support(ctx: Any, question: str) -> str:
    result = await support.run(question)
    return str(result.output)


@function_tool
def lookup(order: int) -> str:
    """Look an order up."""
    return f"order {order} shipped"


@function_tool(needs_approval=True)
def cancel(order: int) -> str:
    """Cancel an order."""
    return f"cancelled order {order}"


def sdk_agent(model: ScriptedAgentsModel) -> SdkAgent[Any]:
    return SdkAgent(name="testkit_sdk", model=model, tools=[lookup, cancel])


sdk_model_holder: dict[str, ScriptedAgentsModel] = {}


@workflow(name="testkit.agent_sdk")
async def agent_sdk(ctx: Any, question: str) -> str:
    result = await FanfoldRunner.run(sdk_agent(sdk_model_holder["model"]), question)
    return str(result.final_output)
