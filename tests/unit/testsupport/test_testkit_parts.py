"""The test kit's pure parts: what a blocked run waits for, mock outcomes, scripted replies."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from runtime.core.waiting import OpenStep, Waiting, waiting_for
from runtime.testing.agents.replies import Script, ScriptExhausted, Text, ToolCall
from runtime.testing.mocks import UNSET, Outcome

T = datetime(2030, 1, 1, tzinfo=UTC)


def test_testkit_waiting_for_names_the_latest_open_step() -> None:
    callback = OpenStep(1, "callback", "approval", None)
    sleep = OpenStep(2, "sleep", "sleep", T)
    assert waiting_for([callback, sleep], T) == Waiting("sleep", None, T)
    assert waiting_for([callback], None) == Waiting("callback", "approval", None)
    assert waiting_for([OpenStep(3, "message", "fanfold.approvals.r1", None)], None).kind == (
        "approval"
    )
    assert waiting_for([OpenStep(3, "message", "orders", T)], T) == Waiting("message", "orders", T)
    poll = OpenStep(4, "step", "ready", T, {"args": [], "poll": {"interval": 5}})
    assert waiting_for([poll], T) == Waiting("condition", "ready", T)
    retry = OpenStep(4, "step", "charge", T, {"args": [1]})
    assert waiting_for([retry], T) == Waiting("sleep", "charge", T)
    assert waiting_for([OpenStep(5, "child", "c", None)], None).kind == "children"
    names = {"names": ["add_item", "checkout"], "timeout": 60.0}
    update = OpenStep(6, "update", "ctx.next_update", T, names)
    assert waiting_for([update], T) == Waiting("update", "add_item, checkout", T)
    any_update = OpenStep(6, "update", "ctx.next_update", None, {"names": [], "timeout": None})
    assert waiting_for([any_update], None) == Waiting("update", None, None)


def test_testkit_outcome_list_is_used_one_per_call() -> None:
    outcome = Outcome(UNSET, UNSET, [ValueError("one"), 2])
    with pytest.raises(ValueError, match="one"):
        outcome()
    assert outcome() == 2
    with pytest.raises(RuntimeError, match="ran out"):
        outcome()
    with pytest.raises(TypeError, match="exactly one"):
        Outcome(1, KeyError, UNSET)
    assert Outcome(UNSET, UNSET, lambda a, b=0: a + b)(1, b=2) == 3


def test_testkit_script_replies_and_call_ids() -> None:
    script = Script(["hi", [ToolCall("a", {"x": 1}), ToolCall("b")], lambda given: given])
    assert script.next("m1") == [Text("hi")]
    assert script.next("m2") == [ToolCall("a", {"x": 1}, "call-1-0"), ToolCall("b", {}, "call-1-1")]
    assert script.next("last") == [Text("last")]
    assert script.calls == 3 and script.inputs == ["m1", "m2", "last"]
    with pytest.raises(ScriptExhausted):
        script.next("more")
