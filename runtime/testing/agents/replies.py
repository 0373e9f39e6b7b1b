"""A scripted model's replies, the same for both agent libraries (and importing neither).

A script is a list with one reply per model call, in order: a `str` (or `Text`) answers with
text; a `ToolCall` asks for one tool; a list of `ToolCall`s asks for several at once (parallel
tool calls); a callable gets the call's input (the library's own messages) and returns one of
those, for a reply that depends on what the tools said.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Text:
    """A text answer (what a `str` reply is)."""

    content: str


@dataclass(frozen=True)
class ToolCall:
    """A call of tool `name` with `args`; `call_id` is made from the call's place if None."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)
    call_id: str | None = None


Reply = str | Text | ToolCall | Sequence[ToolCall] | Callable[[Any], Any]


class ScriptExhausted(AssertionError):
    """The model was called more often than its script has replies."""


class Script:
    """The replies of one scripted model, handed out one per call; counts the calls and keeps
    each call's input."""

    def __init__(self, replies: Sequence[Reply]) -> None:
        self.replies = list(replies)
        self.inputs: list[Any] = []
        self._lock = threading.Lock()

    @property
    def calls(self) -> int:
        """How many times the model was called (a durable run's replays call it no more)."""
        with self._lock:
            return len(self.inputs)

    def next(self, given: Any) -> list[Text | ToolCall]:
        """The parts of the reply to this call, whose input is `given`."""
        with self._lock:
            turn = len(self.inputs)
            if turn >= len(self.replies):
                raise ScriptExhausted(
                    f"the scripted model was called {turn + 1} times; its script has "
                    f"{len(self.replies)} replies"
                )
            self.inputs.append(given)
            reply = self.replies[turn]
        if callable(reply) and not isinstance(reply, Text | ToolCall):
            reply = reply(given)
        return _parts(reply, turn)


def _parts(reply: Any, turn: int) -> list[Text | ToolCall]:
    if isinstance(reply, str):
        return [Text(reply)]
    if isinstance(reply, Text):
        return [reply]
    if isinstance(reply, ToolCall):
        reply = [reply]
    if isinstance(reply, Sequence) and reply and all(isinstance(r, ToolCall) for r in reply):
        return [
            r if r.call_id else ToolCall(r.name, dict(r.args), f"call-{turn}-{index}")
            for index, r in enumerate(reply)
        ]
    raise TypeError(f"a reply is a str, a Text, a ToolCall or a list of ToolCalls, not {reply!r}")
