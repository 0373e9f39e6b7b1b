"""`bench agents`' workflow: the same 10-turn agent run bare and durable in one run.

The model is pydantic-ai's `FunctionModel` answering at once (a tool call for nine turns, then
the answer), so what is timed is the framework: pydantic-ai alone, and pydantic-ai with every
model request and tool call a Fanfold step. Only `bench agents` loads this module (its
workers through FANFOLD_WORKFLOW_MODULES).
"""

from __future__ import annotations

import time
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from runtime import workflow
from runtime.agents import FanfoldDurability

TURNS = 10


def _answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    turn = sum(1 for m in messages if isinstance(m, ModelResponse))
    if turn < TURNS - 1:
        return ModelResponse(parts=[ToolCallPart("lookup", {"n": turn}, f"call-{turn}")])
    return ModelResponse(parts=[TextPart("done")])


def lookup(n: int) -> str:
    return f"item {n}"


bare = Agent(FunctionModel(_answer), name="bench_bare", tools=[lookup])
durable = Agent(
    FunctionModel(_answer), name="bench_agent", tools=[lookup], capabilities=[FanfoldDurability()]
)
quiet = Agent(
    FunctionModel(_answer),
    name="bench_quiet",
    tools=[lookup],
    capabilities=[FanfoldDurability(live_events=False)],
)


@workflow(name="bench.agents.turns")
async def turns(ctx: Any, live_first: bool = True) -> dict[str, float]:
    """Run the bare agent, then the durable one and the durable one without live events (in
    the order `live_first` says: the bench alternates it, so neither gains from going
    second); their wall times in milliseconds."""
    durables = [("durable_ms", durable), ("quiet_ms", quiet)]
    timings = {}
    for key, agent in [("bare_ms", bare), *(durables if live_first else durables[::-1])]:
        began = time.perf_counter()
        await agent.run("go")
        timings[key] = (time.perf_counter() - began) * 1000
    return timings
