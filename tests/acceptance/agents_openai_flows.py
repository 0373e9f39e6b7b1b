"""Workflows for the OpenAI Agents SDK acceptance tests (FanfoldRunner on a real prefork worker).

Imported by the test process and, through FANFOLD_WORKFLOW_MODULES, by the worker processes.
A scripted Model answers (nothing calls OpenAI); it and the tools record each execution in
Redis lists on the counters database, so the test can count them across worker processes.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import AsyncIterator
from typing import Any

from agents import Agent, Model, ModelResponse, function_tool, set_tracing_disabled
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputRefusal,
    ResponseOutputText,
)

from runtime import workflow
from runtime.agents.openai_runner import FanfoldRunner
from tests.support.services import counters_redis_client

os.environ.setdefault("OPENAI_API_KEY", "sk-offline-dummy")
set_tracing_disabled(True)
MODULE = __name__
MODEL = "tests:agents-openai:model"  # one entry (the turn) per model call that ran
TOOLS = "tests:agents-openai:tools"  # one entry (the argument) per tool body that ran
TURNS = 5
BLOCK_AT = 2  # the tool call of this turn blocks the first time: the test kills the worker


def _text(text: str) -> ResponseOutputMessage:
    content: list[ResponseOutputText | ResponseOutputRefusal] = [
        ResponseOutputText(type="output_text", text=text, annotations=[])
    ]
    return ResponseOutputMessage(
        id="msg", type="message", role="assistant", status="completed", content=content
    )


def _call(turn: int, name: str, order: int) -> ResponseFunctionToolCall:
    arguments = json.dumps({"order": order})
    return ResponseFunctionToolCall(
        type="function_call", call_id=f"call-{turn}", name=name, arguments=arguments
    )


def _turn(items: Any) -> int:
    """Which turn this is: how many tool calls the model already made in the input."""
    if isinstance(items, str):
        return 0
    return sum(1 for i in items if isinstance(i, dict) and i.get("type") == "function_call")


class LookupModel(Model):
    """Looks an order up each turn, then answers how many it looked up."""

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        turn = _turn(input)
        counters_redis_client().rpush(MODEL, turn)
        output: list[Any] = [_text(f"looked up {turn} items")]
        if turn < TURNS - 1:
            output = [_call(turn, "lookup", turn)]
        return ModelResponse(output=output, usage=Usage(requests=1), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError


class RefundModel(Model):
    """Asks for a refund, then answers with the tool's output (or its rejection)."""

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        counters_redis_client().rpush(MODEL, _turn(input))
        output: list[Any] = [_call(0, "refund", 7)]
        if _turn(input):
            outputs = [i for i in input if i.get("type") == "function_call_output"]
            output = [_text(f"done: {outputs[-1].get('output')}")]
        return ModelResponse(output=output, usage=Usage(requests=1), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError


@function_tool
def lookup(order: int) -> str:
    """Look an order up."""
    redis = counters_redis_client()
    redis.rpush(TOOLS, order)
    if order == BLOCK_AT and redis.incr(f"{TOOLS}:blocked") == 1:
        time.sleep(600)  # until SIGKILL
    return f"item {order}"


@function_tool(needs_approval=True)
def refund(order: int) -> str:
    """Refund an order."""
    counters_redis_client().rpush(TOOLS, order)
    return f"refunded order {order}"


crashy = Agent(name="crashy", model=LookupModel(), tools=[lookup])
refunds = Agent(name="refunds", model=RefundModel(), tools=[refund])


@workflow(name="tests.agents_openai.crashy")
async def crashy_flow(ctx: Any) -> str:
    return str((await FanfoldRunner.run(crashy, "look everything up")).final_output)


@workflow(name="tests.agents_openai.refund")
async def refund_flow(ctx: Any) -> str:
    return str((await FanfoldRunner.run(refunds, "refund order 7")).final_output)
