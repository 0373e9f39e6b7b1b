"""Workflows for the durable-agent acceptance tests (pydantic-ai on a real prefork worker).

Imported by the test process and, through FANFOLD_WORKFLOW_MODULES, by the worker processes.
The model and the tools record each execution in Redis lists on the counters database, so the
test can count them across worker processes.
"""

from __future__ import annotations

import time
from typing import Any

from pydantic_ai import Agent, models
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from runtime import workflow
from runtime.agents import FanfoldApprovals, FanfoldDurability
from tests.support.services import counters_redis_client

models.ALLOW_MODEL_REQUESTS = False
MODULE = __name__
MODEL = "tests:agents:model"  # one entry (the turn) per model request that ran
TOOLS = "tests:agents:tools"  # one entry (the argument) per tool body that ran
TURNS = 5
BLOCK_AT = 2  # the tool call of this turn blocks the first time: the test kills the worker


def _scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    turn = sum(1 for m in messages if isinstance(m, ModelResponse))
    counters_redis_client().rpush(MODEL, turn)
    if turn < TURNS - 1:
        return ModelResponse(parts=[ToolCallPart("lookup", {"n": turn}, f"call-{turn}")])
    return ModelResponse(parts=[TextPart(f"looked up {turn} items")])


crashy = Agent(FunctionModel(_scripted), name="crashy", capabilities=[FanfoldDurability()])


@crashy.tool_plain
def lookup(n: int) -> str:
    redis = counters_redis_client()
    redis.rpush(TOOLS, n)
    if n == BLOCK_AT and redis.incr(f"{TOOLS}:blocked") == 1:
        time.sleep(600)  # until SIGKILL
    return f"item {n}"


@workflow(name="tests.agents.crashy")
async def crashy_flow(ctx: Any) -> str:
    return str((await crashy.run("look everything up")).output)


def _refund_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    counters_redis_client().rpush(MODEL, len(messages))
    if not any(isinstance(m, ModelResponse) for m in messages):
        return ModelResponse(parts=[ToolCallPart("refund", {"order": 7}, "call-refund")])
    return ModelResponse(parts=[TextPart(f"done: {messages[-1].parts[-1].content}")])


refunds = Agent(
    FunctionModel(_refund_model),
    name="refunds",
    capabilities=[FanfoldDurability(), FanfoldApprovals()],
)


@refunds.tool_plain(requires_approval=True)
def refund(order: int) -> str:
    counters_redis_client().rpush(TOOLS, order)
    return f"refunded order {order}"


@workflow(name="tests.agents.refund_on_worker")
async def refund_flow(ctx: Any) -> str:
    return str((await refunds.run("refund order 7")).output)
