"""`FanfoldDurability`: pydantic-ai's durability capability on Fanfold steps.

pydantic-ai's base owns the model, toolset and event assembly; this module gives it the three
things an engine owns: where the durable context is (an async Fanfold workflow), how one
operation runs once (`ctx.step(body)`, named by pydantic-ai's journal convention from the
agent's and toolset's names), and how a run waits for an external event (`ctx.recv`, so the
run suspends holding no worker; the question and the answer are in the event log).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pydantic import JsonValue
from pydantic_ai.agent import EventStreamHandler
from pydantic_ai.capabilities.abstract import WrapRunHandler
from pydantic_ai.durable_exec import (
    JSON_CODEC,
    BaseDurabilityCapability,
    DurabilityEngineSpec,
    DurableOperationBackend,
    DurableOperationId,
    JournalCallableOperationBackend,
    ModelRequestId,
    RoleBasedOperationConfig,
    ToolsetCallToolId,
    conversation_id_from_run_id,
)
from pydantic_ai.external_events import (
    ExternalEventError,
    ExternalEventWaiter,
    external_event_scope,
)
from pydantic_ai.models import Model
from pydantic_ai.run import AgentRunResult
from pydantic_ai.tools import AgentDepsT, RunContext

from runtime.agents.approvals import current_workflow_context
from runtime.agents.live import publish, publish_model_response
from runtime.core.current import active_workflow
from runtime.store.messaging.approvals import answer_topic


class FanfoldOperationBackend(JournalCallableOperationBackend[None]):
    """Runs each pydantic-ai operation's `body()` once, as a step of the running workflow."""

    live_events = True  # model and tool steps publish to the run's stream `agent`

    async def execute(
        self,
        *,
        operation_id: DurableOperationId,
        name: str,
        body: Callable[[], Awaitable[object]],
        cache_key: tuple[object, ...],
        config: None,
    ) -> object:
        ctx = current_workflow_context()
        if not self.live_events:
            return await ctx.step(body, name=name)
        if isinstance(operation_id, ModelRequestId):
            return await ctx.step(_publishing(body, publish_model_response), name=name)
        if isinstance(operation_id, ToolsetCallToolId):
            tool = name.rpartition(":")[2]

            async def tool_result(payload: object) -> None:
                await publish("tool_result", tool_name=tool, result=payload)

            return await ctx.step(_publishing(body, tool_result), name=name)
        return await ctx.step(body, name=name)


def _publishing(
    body: Callable[[], Awaitable[object]], announce: Callable[[object], Awaitable[None]]
) -> Callable[[], Awaitable[object]]:
    """`body` followed by publishing its result's live events from inside the same step."""

    async def run() -> object:
        result = await body()
        await announce(result)
        return result

    return run


class FanfoldEventWaiter(ExternalEventWaiter):
    """pydantic-ai's external-event wait on a Fanfold run: the `ask` is a step, the answer a
    message on the run's mailbox (topic `fanfold.approvals.<token>`), received once."""

    def __init__(self, agent_name: str) -> None:
        self._agent_name = agent_name

    async def wait(
        self,
        name: str,
        *,
        ask: Callable[[str], Awaitable[JsonValue]],
        timeout: timedelta | None,
    ) -> JsonValue:
        ctx = current_workflow_context()
        token = str(ctx.uuid4())  # replay-stable: derived from the run and a counter

        async def asking() -> JsonValue:
            return await ask(token)

        step_name = f"{self._agent_name}__external_event.{name}.ask"
        answer = await ctx.step(asking, name=step_name)
        if answer is not None:
            return answer
        seconds = None if timeout is None else timeout.total_seconds()
        got = await ctx.recv(answer_topic(token), timeout=seconds)
        if got is None:
            raise ExternalEventError(f"no answer to {name!r} before the timeout")
        if isinstance(got, dict) and isinstance(got.get("error"), str):
            raise ExternalEventError(got["error"])
        return got


_NO_CONFIG: RoleBasedOperationConfig[None] = RoleBasedOperationConfig(
    model=None, event=None, capability=None, tool=None
)


@dataclass(init=False, kw_only=True)
class FanfoldDurability(BaseDurabilityCapability[AgentDepsT]):
    """Makes an agent durable on Fanfold: `Agent(model, name="support",
    capabilities=[FanfoldDurability()])`, then `await agent.run(...)` in an async workflow.

    Outside a Fanfold run it does nothing. Inside one, every model request, tool call, MCP
    call and the other operations pydantic-ai lists are steps; a deferred tool waits in the
    same run (see runtime.agents.approvals for the approvals people give).
    """

    engine_spec = DurabilityEngineSpec(
        engine_name="Fanfold",
        durable_unit_noun="step",
        durable_container_noun="workflow",
        codec=JSON_CODEC,  # steps record JSON in the event log
        wrapped_toolset_kinds=frozenset({"function", "mcp", "dynamic"}),
        toolset_lifecycles={
            "function": "enter-always",
            "mcp": "enter-in-durable-unit",
            "dynamic": "enter-never",
        },
        unsupported_runtime_toolset_kinds=frozenset({"function", "mcp", "dynamic"}),
        journal_discovery=True,
        # Steps take their positions when called; one tool at a time keeps that order the
        # model's order on every replay.
        sequential_tools_in_durable_context=True,
        tool_config_key="fanfold",
    )

    def __init__(
        self,
        *,
        models: Mapping[str, Model] | None = None,
        event_stream_handler: EventStreamHandler[AgentDepsT] | None = None,
        name: str | None = None,
        live_events: bool = True,
    ) -> None:
        """`name` defaults to the agent's name (step names start with it); `models` registers
        extra models by id for run-time model switching, as in pydantic-ai's other engines;
        `live_events=False` publishes nothing to the run's stream `agent`."""
        super().__init__(models=models, event_stream_handler=event_stream_handler, name=name)
        self.live_events = live_events

    @property
    def in_durable_context(self) -> bool:
        return active_workflow() is not None

    def get_default_run_id(self) -> str | None:
        ctx = active_workflow()
        return None if ctx is None else f"{ctx.run_id}:{ctx.uuid4()}"

    def get_default_conversation_id(self, run_id: str) -> str | None:
        return conversation_id_from_run_id(run_id) if self.in_durable_context else None

    async def get_run_start_time(self, run_id: str) -> datetime | None:
        ctx = active_workflow()
        return None if ctx is None else ctx.now()

    def get_durable_operation_backend(self) -> DurableOperationBackend[Any]:
        backend = FanfoldOperationBackend(
            agent_name=self.name, default_model_id=self._default_model_id, config=_NO_CONFIG
        )
        backend.live_events = self.live_events
        return backend

    async def wrap_run(
        self, ctx: RunContext[AgentDepsT], *, handler: WrapRunHandler
    ) -> AgentRunResult[Any]:
        if not self.in_durable_context:
            return await handler()
        with external_event_scope(FanfoldEventWaiter(self.name)):
            return await super().wrap_run(ctx, handler=handler)
