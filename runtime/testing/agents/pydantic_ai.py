"""`ScriptedModel`: a pydantic-ai model that answers from a script (needs pydantic-ai)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel

from runtime.testing.agents.replies import Reply, Script, Text


class ScriptedModel(FunctionModel):
    """A pydantic-ai model whose replies are `replies` (runtime.testing.agents.replies), one
    per model request, streamed or not; `.calls` counts the requests, `.inputs` keeps each
    request's messages. Nothing reaches a provider."""

    def __init__(self, replies: Sequence[Reply], *, model_name: str = "scripted") -> None:
        self.script = Script(replies)
        super().__init__(self._answer, stream_function=self._stream, model_name=model_name)

    @property
    def calls(self) -> int:
        return self.script.calls

    @property
    def inputs(self) -> list[Any]:
        return self.script.inputs

    def _answer(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        parts: list[Any] = [
            TextPart(p.content)
            if isinstance(p, Text)
            else ToolCallPart(p.name, p.args, p.call_id or p.name)
            for p in self.script.next(messages)
        ]
        return ModelResponse(parts=parts)

    async def _stream(
        self, messages: list[ModelMessage], info: AgentInfo
    ) -> AsyncIterator[str | DeltaToolCalls]:
        for index, part in enumerate(self.script.next(messages)):
            if isinstance(part, Text):
                yield part.content
            else:
                call = DeltaToolCall(part.name, json.dumps(part.args), tool_call_id=part.call_id)
                yield {index: call}
