"""A streamed model call of the OpenAI Agents SDK as one step, and its replay.

Inside the step the model's stream is read to its end: each text delta goes to the run's
`agent` stream as it arrives (`publish_now`), and the step records the response the stream
completed with, as `runtime.agents.openai_runner.response_to_json` does for a plain call.
After the step, on the first run and on every replay alike, the SDK gets that response back
as one `response.completed` event: the model is not called again, and the SDK's streamed run
goes on from the same response either way.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from agents import ModelResponse
from agents.items import TResponseOutputItem, TResponseStreamEvent
from agents.usage import Usage
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseOutputItemDoneEvent,
    ResponseTextDeltaEvent,
    ResponseUsage,
)

from runtime.agents.live import publish_now


async def read_stream(events: AsyncIterator[TResponseStreamEvent]) -> ModelResponse:
    """The response a model's event stream completes with; its text deltas are published to
    the run's `agent` stream as they arrive. Raises RuntimeError for a stream that ends
    without completing."""
    done_items: list[TResponseOutputItem] = []
    completed: Response | None = None
    async for event in events:
        if isinstance(event, ResponseTextDeltaEvent) and event.delta:
            await publish_now("text_delta", text=event.delta)
        elif isinstance(event, ResponseOutputItemDoneEvent):
            done_items.append(event.item)
        elif isinstance(event, ResponseCompletedEvent):
            completed = event.response
    if completed is None:
        raise RuntimeError("the model's stream ended without a response.completed event")
    usage = completed.usage
    return ModelResponse(
        # Some backends leave the completed response's output empty and send the items alone.
        output=list(completed.output) or done_items,
        usage=Usage(
            requests=1,
            input_tokens=usage.input_tokens if usage else 0,
            output_tokens=usage.output_tokens if usage else 0,
            total_tokens=usage.total_tokens if usage else 0,
        ),
        response_id=completed.id,
        request_id=getattr(completed, "_request_id", None),
    )


def completed_event(response: ModelResponse) -> ResponseCompletedEvent:
    """The one event a streamed model call's step replays to the SDK: its recorded response."""
    usage = response.usage
    recorded = Response.model_construct(
        id=response.response_id or "",
        created_at=0.0,
        model="",
        object="response",
        output=list(response.output),
        parallel_tool_calls=True,
        tool_choice="auto",
        tools=[],
        usage=ResponseUsage(
            input_tokens=usage.input_tokens,
            input_tokens_details=usage.input_tokens_details,
            output_tokens=usage.output_tokens,
            output_tokens_details=usage.output_tokens_details,
            total_tokens=usage.total_tokens,
        ),
    )
    return ResponseCompletedEvent(type="response.completed", sequence_number=0, response=recorded)


def response_text(payload: dict[str, Any]) -> str:
    """The text of a recorded response's messages."""
    return "".join(
        str(part.get("text", ""))
        for item in payload["output"]
        if item.get("type") == "message"
        for part in item.get("content", [])
    )
