"""FanfoldRunner's streamed and sync runs, on runs driven by hand with the Agents SDK's own
`ScriptedModel` (nothing calls OpenAI): each model call a step whose text streams live to the
run's `agent` stream, and a replay (the run resumed after a timer) that calls the model no
more: the script has no step left, so a second call would raise."""

from __future__ import annotations

import os
import uuid
from typing import Any

import pytest
from agents import Agent, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call

from runtime import workflow
from runtime.agents import FanfoldRunner, agent_events, decide
from runtime.agents.approvals import approvals
from runtime.core.clock import FakeClock
from runtime.executor import ExecutionOutcome, execute
from runtime.models import Run, Step
from runtime.services import start_run

os.environ.setdefault("OPENAI_API_KEY", "sk-offline-dummy")
set_tracing_disabled(True)
LOOKUPS: list[int] = []


@function_tool
def lookup(order: int) -> str:
    """Where an order is."""
    LOOKUPS.append(order)
    return f"order {order} shipped"


tracker = Agent(name="tracker", tools=[lookup])


def _script() -> ScriptedModel:
    return ScriptedModel(
        [
            [function_call("lookup", {"order": 7}, call_id="c1")],
            [assistant_message("Order 7 has shipped.")],
        ]
    )


@workflow(name="tests.agents_openai.streamed")
async def streamed_flow(ctx: Any) -> dict[str, Any]:
    result = FanfoldRunner.run_streamed(tracker, "where is order 7?")
    seen = [event.type async for event in result.stream_events()]
    await ctx.sleep(10)  # the run resumes after this: a replay of the whole agent run
    return {"output": str(result.final_output), "raw": seen.count("raw_response_event")}


@workflow(name="tests.agents_openai.sync")
def sync_flow(ctx: Any) -> str:
    result = FanfoldRunner.run_sync(tracker, "where is order 7?")
    ctx.sleep(10)
    return str(result.final_output)


@pytest.fixture
def model() -> ScriptedModel:
    LOOKUPS.clear()
    tracker.model = _script()
    return tracker.model


def _names(run_id: uuid.UUID) -> list[str]:
    rows = Step.objects.filter(run_id=run_id).order_by("position")
    return list(rows.values_list("name", flat=True))


def _run_to_the_end(name: str, clock: FakeClock, model: ScriptedModel) -> uuid.UUID:
    run, _ = start_run(name, [])
    assert execute(run.id, clock=clock).outcome is ExecutionOutcome.SUSPENDED
    assert len(model.calls) == 2 and model.remaining_steps == 0
    clock.advance(60)
    assert execute(run.id, clock=clock).outcome is ExecutionOutcome.COMPLETED
    assert len(model.calls) == 2  # the replay asked the model nothing
    assert LOOKUPS == [7]
    return run.id


STEPS = ["openai.tracker.model", "openai.tracker.tool.lookup", "openai.tracker.model", "sleep"]


def test_a_streamed_run_streams_its_text_live_and_replays_without_the_model(
    clock: FakeClock, model: ScriptedModel
) -> None:
    run_id = _run_to_the_end("tests.agents_openai.streamed", clock, model)
    result = Run.objects.get(id=run_id).result
    assert result["output"] == "Order 7 has shipped."
    assert result["raw"] == 2  # the SDK saw one recorded response.completed per model call
    assert _names(run_id) == STEPS
    events = list(agent_events(run_id))
    assert [(e["kind"], e["step"]) for e in events] == [
        ("tool_call", 1),
        ("tool_result", 2),
        ("text_delta", 3),
        ("final", 3),
    ]
    assert events[0]["tool_call_id"] == "c1" and events[2]["text"] == "Order 7 has shipped."
    assert not any(e["superseded"] for e in events)


def test_run_sync_runs_the_agent_durably_in_a_def_workflow(
    clock: FakeClock, model: ScriptedModel
) -> None:
    run_id = _run_to_the_end("tests.agents_openai.sync", clock, model)
    assert Run.objects.get(id=run_id).result == "Order 7 has shipped."
    assert _names(run_id) == STEPS
    kinds = [e["kind"] for e in agent_events(run_id)]
    assert kinds == ["tool_call", "tool_result", "text_delta", "final"]


@workflow(name="tests.agents_openai.sync_in_async")
async def misplaced_flow(ctx: Any) -> str:
    return str(FanfoldRunner.run_sync(tracker, "where?").final_output)


def test_run_sync_refuses_an_async_workflow_and_run_streamed_no_workflow(
    clock: FakeClock, model: ScriptedModel
) -> None:
    run, _ = start_run("tests.agents_openai.sync_in_async", [])
    assert execute(run.id, clock=clock).outcome is ExecutionOutcome.FAILED
    assert "await FanfoldRunner.run" in str(Run.objects.get(id=run.id).error)
    with pytest.raises(LookupError, match="inside an async def Fanfold workflow"):
        FanfoldRunner.run_streamed(tracker, "where?")
    assert model.calls == ()


@function_tool(needs_approval=True)
def refund(order: int) -> str:
    """Refund an order."""
    LOOKUPS.append(-order)
    return f"refunded order {order}"


refunder = Agent(name="refunder", tools=[refund])


@workflow(name="tests.agents_openai.streamed_refund")
async def streamed_refund_flow(ctx: Any) -> str:
    result = FanfoldRunner.run_streamed(refunder, "refund order 7")
    async for _ in result.stream_events():
        pass
    while result.interruptions:
        state = await FanfoldRunner.decide_interruptions(refunder, result)
        result = FanfoldRunner.run_streamed(refunder, state)
        async for _ in result.stream_events():
            pass
    return str(result.final_output)


def test_a_streamed_run_waits_for_an_approval_then_goes_on(clock: FakeClock) -> None:
    LOOKUPS.clear()
    refunder.model = model = ScriptedModel(
        [
            [function_call("refund", {"order": 7}, call_id="r1")],
            [assistant_message("Refunded.")],
        ]
    )
    run, _ = start_run("tests.agents_openai.streamed_refund", [])
    assert execute(run.id, clock=clock).outcome is ExecutionOutcome.SUSPENDED
    [pending] = approvals(run.id)
    assert (pending.tool_name, pending.arguments, LOOKUPS) == ("refund", {"order": 7}, [])
    decide(run.id, pending.id, approved=True, by={"username": "ada"})
    assert execute(run.id, clock=clock).outcome is ExecutionOutcome.COMPLETED
    assert Run.objects.get(id=run.id).result == "Refunded."
    assert LOOKUPS == [-7] and len(model.calls) == 2
    names = _names(run.id)
    assert names[2].startswith("fanfold.approvals.")  # the wait for the answer
    assert names[:2] + names[3:] == [
        "openai.refunder.model",
        "openai.refunder.approve.ask",
        "openai.refunder.tool.refund",
        "openai.refunder.model",
    ]
