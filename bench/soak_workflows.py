"""`bench soak`'s workflows: the mixed load's kinds, each kept RETENTION after it finishes.

Their `retention=` puts them in the workers' retention passes (runtime.worker.housekeeping), and
bench.soak_purge deletes them past it once a minute, so the history stays the size of a couple of
minutes of load. Only `bench soak` loads this module
(its workers through FANFOLD_WORKFLOW_MODULES).

The agent's model is pydantic-ai's `FunctionModel`, scripted (look the order up, refund it
once a person approves, say so): nothing calls a model provider, and model requests are
refused outright should anything try.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic_ai import Agent, models
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from bench.io_workflows import wait_async
from runtime import step, workflow
from runtime.agents import FanfoldApprovals, FanfoldDurability

models.ALLOW_MODEL_REQUESTS = False

RETENTION = timedelta(seconds=60)
PREFIX = "bench.soak."  # every workflow here is named so
SIGNAL = "bench.soak.paid"
CALLBACK = "bench.soak.paid"


@step(name="bench.soak.add")
def add(total: int, n: int) -> int:
    return total + n


@workflow(name="bench.soak.sequential", retention=RETENTION)
def sequential(ctx: Any, steps: int) -> int:
    """`steps` steps one after the other, each on the last one's result."""
    total = 0
    for i in range(steps):
        total = ctx.step(add, total, i)
    return total


@workflow(name="bench.soak.fanout", retention=RETENTION)
def fanout(ctx: Any, branches: int) -> int:
    """`branches` no-op branches on the workers, then their sum."""
    return sum(ctx.all([add.s(i, 1) for i in range(branches)]))


@workflow(name="bench.soak.io_fanout", retention=RETENTION)
def io_fanout(ctx: Any, branches: int, io_ms: float) -> int:
    """`branches` async branches that each await `io_ms` milliseconds (an HTTP call's stand-in)."""
    return len(ctx.all([wait_async.s(i, io_ms) for i in range(branches)]))


@workflow(name="bench.soak.callback", retention=RETENTION)
def callback(ctx: Any) -> Any:
    """Wait for one callback post, then a step on what it brought."""
    paid = ctx.create_callback(CALLBACK).wait()
    return ctx.step(add, int(paid["amount"]), 1)


@workflow(name="bench.soak.signal", retention=RETENTION)
def signal(ctx: Any, order_id: str) -> Any:
    """Wait for the signal carrying this `order_id`, then a step on it."""
    paid = ctx.wait_for_signal(SIGNAL, match={"order_id": order_id})
    return ctx.step(add, int(paid["amount"]), 1)


def _scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    turn = sum(1 for m in messages if isinstance(m, ModelResponse))
    if turn == 0:
        return ModelResponse(parts=[ToolCallPart("order_status", {"order": 7}, "call-status")])
    if turn == 1:
        return ModelResponse(parts=[ToolCallPart("refund", {"order": 7}, "call-refund")])
    return ModelResponse(parts=[TextPart("refund done")])


support = Agent(
    FunctionModel(_scripted),
    name="bench_soak_support",
    capabilities=[FanfoldDurability(), FanfoldApprovals()],
)


@support.tool_plain
def order_status(order: int) -> str:
    return f"order {order} arrived damaged"


@support.tool_plain(requires_approval=True)
def refund(order: int) -> str:
    return f"refunded order {order}"


@workflow(name="bench.soak.agent", retention=RETENTION)
async def agent(ctx: Any, question: str) -> str:
    """The support agent: two model turns with tools, the refund waiting for an approval."""
    result = await support.run(question)
    return str(result.output)
