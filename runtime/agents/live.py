"""Live agent events: what a durable agent's steps publish to the run's stream `agent`.

Each event is `{"step", "attempt", "kind", ...}` with kind `text_delta` (`text`), `tool_call`
(`tool_name`, `args`, `tool_call_id`), `tool_result` (`tool_name`, `result`) or `final`
(`text`), tagged with the position and attempt of the step that produced it. A model
response's and a tool result's events (`publish`) commit with the step's result, in its
checkpoint's transaction: one write for all of them, and none for an attempt that failed.
Text streamed as it arrives (`publish_now`) is written at once, so a step retried after it
streamed (its worker killed mid-response) streams again under a higher attempt:
`agent_events` marks the events of every attempt but a step's last one `superseded`; SSE
clients do the same with `attempt`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

from runtime.core.current import active_step
from runtime.durable.awaited import in_run_thread
from runtime.streaming.reader import chunks_after
from runtime.streaming.writer import stream

AGENT_STREAM = "agent"
KINDS = ("text_delta", "tool_call", "tool_result", "final")


def _event(kind: str, data: dict[str, Any]) -> dict[str, Any] | None:
    if kind not in KINDS:
        raise ValueError(f"an agent event's kind is one of {', '.join(KINDS)}, not {kind!r}")
    info = active_step()
    if info is None:
        return None  # workflow code replays: only steps publish, once per attempt
    return {"step": info.position, "attempt": info.attempt, "kind": kind, **data}


async def publish(kind: str, **data: Any) -> None:
    """Append one event of `kind` to the run's `agent` stream with the step's result: it
    commits in the step's checkpoint (no transaction of its own), and a failed attempt's
    events are never written. Only from inside a step; in a fan-out branch it is written at
    once."""
    event = _event(kind, data)
    if event is not None and not stream(AGENT_STREAM).write_with_step(event):
        await in_run_thread(stream(AGENT_STREAM).write, event)


async def publish_now(kind: str, **data: Any) -> None:
    """Append one event of `kind` to the run's `agent` stream at once, in a transaction of
    its own (a streamed model call's text as it arrives). Only from inside a step."""
    event = _event(kind, data)
    if event is not None:
        await in_run_thread(stream(AGENT_STREAM).write, event)


def _parts(payload: Any) -> list[dict[str, Any]] | None:
    """The parts of a model response in its JSON form, wherever the operation's result nests it."""
    if isinstance(payload, dict):
        parts = payload.get("parts")
        if isinstance(parts, list) and payload.get("kind") == "response":
            return parts
        for value in payload.values():
            found = _parts(value)
            if found is not None:
                return found
    return None


async def publish_model_response(payload: Any) -> None:
    """The events of one pydantic-ai model response (see `publish_response`)."""
    parts = _parts(payload) or []
    text = "".join(str(p.get("content", "")) for p in parts if p.get("part_kind") == "text")
    calls = [
        (p.get("tool_name"), p.get("args"), p.get("tool_call_id"))
        for p in parts
        if p.get("part_kind") == "tool-call"
    ]
    await publish_response(text, calls)


async def publish_response(
    text: str, calls: list[tuple[Any, Any, Any]], *, text_streamed: bool = False
) -> None:
    """The events of one model response of any framework: its text (unless it was streamed
    as it arrived), each tool call (name, arguments, call id) in order, and `final` when it
    calls no tool."""
    if text and not text_streamed:
        await publish("text_delta", text=text)
    for tool_name, args, tool_call_id in calls:
        await publish("tool_call", tool_name=tool_name, args=args, tool_call_id=tool_call_id)
    if not calls:
        await publish("final", text=text)


def mark_superseded(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`events` with `superseded: true` on those of an attempt a later attempt replaced."""
    last: dict[Any, int] = {}
    for event in events:
        last[event.get("step")] = max(last.get(event.get("step"), 0), int(event.get("attempt", 0)))
    return [{**e, "superseded": int(e.get("attempt", 0)) < last[e.get("step")]} for e in events]


def agent_events(run_id: uuid.UUID, after: int = 0) -> Iterator[dict[str, Any]]:
    """The run's agent events written so far (after chunk seq `after`), superseded marked."""
    events: list[dict[str, Any]] = []
    while True:
        chunks = chunks_after(run_id, AGENT_STREAM, after)
        if not chunks:
            break
        events.extend(c.value for c in chunks if isinstance(c.value, dict))
        after = chunks[-1].seq
    yield from mark_superseded(events)
