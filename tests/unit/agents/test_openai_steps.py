"""FanfoldRunner's pieces that need no run: a model response survives its step's JSON, and
CallOrder lets tool calls take their positions in the model's order whatever the event
loop's."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from agents import ModelResponse
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputRefusal,
    ResponseOutputText,
)

from runtime.agents import openai_order
from runtime.agents.openai_order import CallOrder
from runtime.agents.openai_runner import response_from_json, response_to_json


def test_a_model_response_round_trips_through_its_checkpointed_json() -> None:
    content: list[ResponseOutputText | ResponseOutputRefusal] = [
        ResponseOutputText(type="output_text", text="checking", annotations=[])
    ]
    response = ModelResponse(
        output=[
            ResponseOutputMessage(
                id="m1", type="message", role="assistant", status="completed", content=content
            ),
            ResponseFunctionToolCall(
                type="function_call", call_id="c1", name="lookup", arguments='{"order": 1}'
            ),
        ],
        usage=Usage(requests=1, input_tokens=12, output_tokens=5, total_tokens=17),
        response_id="r1",
    )
    payload = response_to_json(response)
    assert json.loads(json.dumps(payload)) == payload  # plain JSON, as the step stores it
    back = response_from_json(payload)
    assert back.output == response.output
    assert (back.usage.input_tokens, back.usage.total_tokens, back.response_id) == (12, 17, "r1")


async def _take(order: CallOrder, call_id: str, delay: float, taken: list[str]) -> None:
    await asyncio.sleep(delay)  # hooks and guardrails before the tool is invoked
    await order.turn(call_id)
    taken.append(call_id)  # where ctx.step would take its position
    order.taken(call_id)


def test_tool_calls_take_positions_in_the_models_order() -> None:
    async def main() -> list[str]:
        order, taken = CallOrder(), list[str]()
        order.expect(["a", "b", "c"])
        await asyncio.gather(
            _take(order, "c", 0.0, taken),
            _take(order, "a", 0.02, taken),
            _take(order, "b", 0.0, taken),
            _take(order, "unknown", 0.0, taken),  # not in the response: no gate
        )
        return taken

    assert asyncio.run(main()) == ["unknown", "a", "b", "c"]


def test_a_call_that_never_runs_holds_the_next_only_for_the_grace(monkeypatch: Any) -> None:
    monkeypatch.setattr(openai_order, "SKIPPED_CALL_GRACE", 0.01)

    async def main() -> list[str]:
        order, taken = CallOrder(), list[str]()
        order.expect(["rejected", "b", "c"])  # a guardrail stops "rejected" before it runs
        await asyncio.gather(_take(order, "c", 0.0, taken), _take(order, "b", 0.0, taken))
        return taken

    assert asyncio.run(main()) == ["b", "c"]
