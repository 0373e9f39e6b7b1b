"""`FanfoldRunner`: the OpenAI Agents SDK's `Runner` inside a Fanfold workflow.

`FanfoldRunner.run(agent, input)` runs the agent with every model call a step named
`openai.<agent>.model` (its response checkpointed as JSON, so a replay asks the model nothing)
and every function tool call a step named `openai.<agent>.tool.<tool>`. A response's parallel
tool calls take their step positions in the order the model emitted their call ids
(runtime.agents.openai_order), so replays line up. A tool that needs approval interrupts the
SDK's run; the runner asks people through runtime.agents.approvals (the same approvals as
pydantic-ai's deferred tools: REST, admin, `approval_requested`/`approval_decided` events),
waits holding no worker, then resumes the SDK's `RunState` with each approval or rejection.
`run_sync` is the same from a `def` workflow; `run_streamed` streams each model call's text to
the run's `agent` stream from inside its step (runtime.agents.openai_stream).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator
from typing import Any

from agents import (
    Agent,
    FunctionTool,
    Model,
    ModelResponse,
    RunConfig,
    Runner,
    RunResult,
    RunResultStreaming,
    RunState,
)
from agents.items import TResponseOutputItem, TResponseStreamEvent
from agents.run_internal.turn_preparation import get_model
from agents.tool_context import ToolContext
from agents.usage import Usage
from pydantic import TypeAdapter

from runtime.agents.approvals import ApprovalCall, current_workflow_context, wait_for_approvals
from runtime.agents.live import publish, publish_response
from runtime.agents.openai_order import CallOrder
from runtime.agents.openai_stream import completed_event, read_stream, response_text
from runtime.context import DurableContext
from runtime.core.current import current_sender
from runtime.workflow_call import run_async_from_sync

_OUTPUT_ITEM: TypeAdapter[TResponseOutputItem] = TypeAdapter(TResponseOutputItem)


def response_to_json(response: ModelResponse) -> dict[str, Any]:
    """A model response as the JSON a step checkpoints."""
    usage = response.usage
    return {
        "output": [item.model_dump(mode="json", exclude_none=True) for item in response.output],
        "usage": {
            "requests": usage.requests,
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "total_tokens": usage.total_tokens,
        },
        "response_id": response.response_id,
        "request_id": response.request_id,
    }


def response_from_json(payload: dict[str, Any]) -> ModelResponse:
    """The model response a step checkpointed with `response_to_json`."""
    return ModelResponse(
        output=[_OUTPUT_ITEM.validate_python(item) for item in payload["output"]],
        usage=Usage(**payload["usage"]),
        response_id=payload.get("response_id"),
        request_id=payload.get("request_id"),
    )


async def _publish_response(payload: dict[str, Any], *, text_streamed: bool = False) -> None:
    """The live events of one model response: its text, its tool calls, `final` if none."""
    calls = [
        (item.get("name"), item.get("arguments"), item.get("call_id"))
        for item in payload["output"]
        if item.get("type") == "function_call"
    ]
    await publish_response(response_text(payload), calls, text_streamed=text_streamed)


class FanfoldModel(Model):
    """A model whose every `get_response` is one step of the running workflow."""

    def __init__(self, inner: Model, agent_name: str, order: CallOrder, gated: set[str]) -> None:
        self.inner = inner
        self.step_name = f"openai.{agent_name}.model"
        self.order = order
        self.gated = gated  # the tool names whose calls CallOrder lines up

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        async def ask_model() -> dict[str, Any]:
            payload = response_to_json(await self.inner.get_response(*args, **kwargs))
            await _publish_response(payload)
            return payload

        return self._answer(await current_workflow_context().step(ask_model, name=self.step_name))

    async def stream_response(
        self, *args: Any, **kwargs: Any
    ) -> AsyncIterator[TResponseStreamEvent]:
        """The model's stream read to its end in one step (its text deltas published live),
        then its recorded response as one `response.completed` event (openai_stream)."""

        async def stream_model() -> dict[str, Any]:
            response = await read_stream(self.inner.stream_response(*args, **kwargs))
            payload = response_to_json(response)
            await _publish_response(payload, text_streamed=True)
            return payload

        payload = await current_workflow_context().step(stream_model, name=self.step_name)
        yield completed_event(self._answer(payload))

    def _answer(self, payload: dict[str, Any]) -> ModelResponse:
        """The recorded response, its gated tool calls lined up in the model's order."""
        self.order.expect(
            [
                item["call_id"]
                for item in payload["output"]
                if item.get("type") == "function_call" and item.get("name") in self.gated
            ]
        )
        return response_from_json(payload)


def _durable_tool(tool: FunctionTool, agent_name: str, order: CallOrder) -> FunctionTool:
    """`tool` with each invocation one step, started in the model's call order."""
    invoke = tool.on_invoke_tool
    step_name = f"openai.{agent_name}.tool.{tool.name}"

    async def invoke_as_step(tool_ctx: ToolContext[Any], arguments: str) -> Any:
        async def call_tool() -> Any:
            result = await invoke(tool_ctx, arguments)
            await publish("tool_result", tool_name=tool.name, result=result)
            return result

        await order.turn(tool_ctx.tool_call_id)
        try:
            pending = current_workflow_context().step(
                call_tool, name=step_name
            )  # takes its position
        finally:
            order.taken(tool_ctx.tool_call_id)
        return await pending

    return dataclasses.replace(tool, on_invoke_tool=invoke_as_step)


def durable_agent(
    agent: Agent[Any], run_config: RunConfig, order: CallOrder, done: dict[int, Agent[Any]]
) -> Agent[Any]:
    """A clone of `agent` (and of the agents it hands off to), model and tools as steps."""
    if id(agent) in done:
        return done[id(agent)]
    tools = [t for t in agent.tools if isinstance(t, FunctionTool)]
    gated = {t.name for t in tools if t.needs_approval is False}
    clone = agent.clone(
        model=FanfoldModel(get_model(agent, run_config), agent.name, order, gated),
        tools=[
            _durable_tool(t, agent.name, order) if isinstance(t, FunctionTool) else t
            for t in agent.tools
        ],
    )
    done[id(agent)] = clone
    clone.handoffs = [
        durable_agent(h, run_config, order, done) if isinstance(h, Agent) else h
        for h in agent.handoffs
    ]
    return clone


def _arguments(raw: Any) -> Any:
    text = getattr(raw, "arguments", None)
    try:
        return json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return text


def _durable(agent: Agent[Any], run_config: RunConfig | None) -> tuple[Agent[Any], RunConfig]:
    """The durable clone of `agent`, and the run config that keeps its model calls steps."""
    current_workflow_context()  # fail early outside a workflow
    config = run_config or RunConfig()
    durable = durable_agent(agent, config, CallOrder(), {})
    return durable, dataclasses.replace(config, model=None)  # else it would bypass the steps


class FanfoldRunner:
    """Runs an OpenAI Agents SDK agent durably inside a Fanfold workflow: `await run(...)` or
    `run_streamed(...)` in an `async def` workflow, `run_sync(...)` in a `def` one."""

    @classmethod
    async def run(
        cls,
        agent: Agent[Any],
        input: str | list[Any],
        *,
        run_config: RunConfig | None = None,
        approval_timeout: float | None = None,
        **options: Any,
    ) -> RunResult:
        """`Runner.run(agent, input, ...)` with each model call and tool call a step.

        Interruptions (tools with `needs_approval`) wait for people's decisions through
        Fanfold's approvals, holding no worker; at `approval_timeout` seconds they are denied.
        Other keyword options go to `Runner.run` as they are.
        """
        durable, config = _durable(agent, run_config)
        result = await Runner.run(durable, input, run_config=config, **options)
        while result.interruptions:
            state = await cls.decide_interruptions(agent, result, approval_timeout)
            result = await Runner.run(durable, state, run_config=config, **options)
        return result

    @classmethod
    def run_sync(cls, agent: Agent[Any], input: str | list[Any], **options: Any) -> RunResult:
        """`run` from a sync (`def`) workflow: the agent's steps and approval waits take the
        workflow's next positions, as they would in an async one. Same options as `run`."""
        ctx = current_sender()
        if not isinstance(ctx, DurableContext):
            raise LookupError(
                "FanfoldRunner.run_sync runs inside a def workflow; in an async def workflow, "
                "await FanfoldRunner.run"
            )
        return run_async_from_sync(ctx, cls.run, agent, input, **options)

    @classmethod
    def run_streamed(
        cls,
        agent: Agent[Any],
        input: str | list[Any] | RunState[Any],
        *,
        run_config: RunConfig | None = None,
        **options: Any,
    ) -> RunResultStreaming:
        """`Runner.run_streamed(agent, input, ...)` with each model call a step whose text
        streams live to the run's `agent` stream; a replay asks the model nothing and the SDK
        sees the recorded response as one event. Read `result.stream_events()` to its end.

        A tool that needs approval ends the stream with `result.interruptions`: pass
        `await FanfoldRunner.decide_interruptions(agent, result)` as the next input."""
        durable, config = _durable(agent, run_config)
        return Runner.run_streamed(durable, input, run_config=config, **options)

    @classmethod
    async def decide_interruptions(
        cls,
        agent: Agent[Any],
        result: RunResult | RunResultStreaming,
        approval_timeout: float | None = None,
    ) -> RunState[Any]:
        """Ask people to approve `result.interruptions` (step `openai.<agent>.approve.ask`),
        wait for their decisions holding no worker, and return the run's state with each call
        approved or rejected (with the reason given, or "denied")."""
        items = list(result.interruptions)
        calls = [
            ApprovalCall(
                tool_call_id=str(getattr(item.raw_item, "call_id", "") or item.name),
                tool_name=str(item.name),
                arguments=_arguments(item.raw_item),
            )
            for item in items
        ]
        decisions = await wait_for_approvals(
            f"openai.{agent.name}.approve", calls, timeout=approval_timeout
        )
        state = result.to_state()
        for item, call in zip(items, calls, strict=True):
            decision = decisions[call.tool_call_id]
            if decision.approved:
                state.approve(item)
            else:
                state.reject(item, rejection_message=decision.reason or "denied")
        return state
