"""Agents on scripted models under the environment: tool calls, parallel tool calls, an
approval decided by the test, and the models' call counts (replays ask them nothing)."""

from __future__ import annotations

import pytest
from testkit_agents import agent_sdk, agent_support, sdk_model_holder, support_model

from runtime.testing import WorkflowEnvironment
from runtime.testing.agents import ScriptedAgentsModel, ScriptExhausted, Text, ToolCall


def test_testkit_pydantic_ai_agent_waits_for_an_approval(env: WorkflowEnvironment) -> None:
    support_model.script.inputs.clear()
    run = env.start(agent_support, "Order 7 arrived damaged.")
    waiting = env.run_until_blocked(run)
    assert waiting is not None and waiting.kind == "approval"
    assert support_model.calls == 2  # the parallel look-ups, then the refund
    (decided,) = env.decide_approval(run, approved=True)
    assert (decided.tool_name, decided.arguments) == ("refund", {"order": 7})
    assert run.wait() == "Done: refunded order 7"
    assert support_model.calls == 3  # the resumed run replayed the first two answers


def test_testkit_openai_agents_model_with_parallel_calls_and_a_denial(
    env: WorkflowEnvironment,
) -> None:
    model = ScriptedAgentsModel(
        [
            [ToolCall("lookup", {"order": 1}), ToolCall("lookup", {"order": 2})],
            ToolCall("cancel", {"order": 2}),
            lambda items: Text(f"answer: {items[-1]['output']}"),
        ]
    )
    sdk_model_holder["model"] = model
    run = env.start(agent_sdk, "Cancel order 2")
    waiting = env.run_until_blocked(run)
    assert waiting is not None and waiting.kind == "approval"
    env.decide_approval(run, approved=False, reason="not allowed")
    assert run.wait() == "answer: not allowed"
    assert model.calls == 3


def test_testkit_script_counts_and_runs_out() -> None:
    model = ScriptedAgentsModel(["only"])
    assert model.script.next("hi") == [Text("only")]
    with pytest.raises(ScriptExhausted):
        model.script.next("again")
    assert model.calls == 1
