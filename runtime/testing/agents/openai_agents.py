"""`ScriptedAgentsModel`: an OpenAI Agents SDK `Model` that answers from a script (needs the
`openai-agents` package)."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

from agents import Model, ModelResponse
from agents.usage import Usage
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputRefusal,
    ResponseOutputText,
)

from runtime.testing.agents.replies import Reply, Script, Text


class ScriptedAgentsModel(Model):
    """An Agents SDK model whose replies are `replies` (runtime.testing.agents.replies), one
    per model call, streamed or not; `.calls` counts the calls, `.inputs` keeps each call's
    input items. Give it as the agent's `model=`; nothing reaches OpenAI."""

    def __init__(self, replies: Sequence[Reply]) -> None:
        self.script = Script(replies)

    @property
    def calls(self) -> int:
        return self.script.calls

    @property
    def inputs(self) -> list[Any]:
        return self.script.inputs

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        output = _output(self.script.next(input))
        return ModelResponse(output=output, usage=Usage(requests=1), response_id=None)

    async def stream_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> AsyncIterator[Any]:
        response = Response(
            id="resp-scripted",
            created_at=time.time(),
            model="scripted",
            object="response",
            output=_output(self.script.next(input)),
            parallel_tool_calls=True,
            tool_choice="auto",
            tools=[],
        )
        yield ResponseCompletedEvent(
            type="response.completed", response=response, sequence_number=0
        )


def _output(parts: list[Any]) -> list[Any]:
    output: list[Any] = []
    for part in parts:
        if isinstance(part, Text):
            content: list[ResponseOutputText | ResponseOutputRefusal] = [
                ResponseOutputText(type="output_text", text=part.content, annotations=[])
            ]
            output.append(
                ResponseOutputMessage(
                    id="msg", type="message", role="assistant", status="completed", content=content
                )
            )
        else:
            output.append(
                ResponseFunctionToolCall(
                    type="function_call",
                    call_id=part.call_id or part.name,
                    name=part.name,
                    arguments=json.dumps(part.args),
                )
            )
    return output
