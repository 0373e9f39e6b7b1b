"""Approvals of tool calls by people, inside a workflow, holding no worker while they wait.

`wait_for_approvals` asks (records one `approval_requested` per call, in a step) and waits
on the run's mailbox (`ctx.recv`) for the answer that runtime.store.messaging.approvals sends once
every call is decided over REST or in the admin. Both integrations (pydantic-ai's deferred tools and
the OpenAI Agents SDK's interruptions) go through it; nothing here imports either library.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from runtime.async_context import AsyncDurableContext
from runtime.core.current import active_workflow
from runtime.core.identity import as_run_id
from runtime.messaging.mailbox import send_message
from runtime.store.messaging import approvals as store


@dataclass(frozen=True)
class ApprovalCall:
    """A tool call that needs a person's approval before it runs."""

    tool_call_id: str
    tool_name: str
    arguments: Any


@dataclass(frozen=True)
class Decision:
    """What the person decided about one tool call."""

    approved: bool
    reason: str | None = None


def current_workflow_context() -> AsyncDurableContext:
    """Look up the `ctx` of the async workflow running this code; LookupError outside one."""
    ctx = active_workflow()
    if ctx is None:
        raise LookupError("this needs to run inside an async def Fanfold workflow")
    return ctx


def approval_id(request: str, tool_call_id: str) -> str:
    """The id an approval has in the API: stable for its request and tool call."""
    return str(uuid.uuid5(uuid.UUID(request), tool_call_id))


def record_requests(run_id: str, request: str, calls: list[dict[str, Any]]) -> None:
    """Write the `approval_requested` events of `request` (the body of the asking step; each
    call is `{"tool_call_id", "tool_name", "arguments"}`)."""
    rows = [{**c, "approval_id": approval_id(request, c["tool_call_id"])} for c in calls]
    store.record_requests(as_run_id(run_id), request, rows)


def decisions_from(answer: Any, calls: list[ApprovalCall]) -> dict[str, Decision]:
    """The decisions in an answer sent by runtime.store.messaging.approvals.decide (None: timed
    out)."""
    got = answer.get("approvals", {}) if isinstance(answer, dict) else {}
    out = {}
    for call in calls:
        value = got.get(call.tool_call_id)
        if value is True:
            out[call.tool_call_id] = Decision(True)
        elif isinstance(value, dict):
            out[call.tool_call_id] = Decision(False, value.get("message"))
        else:
            out[call.tool_call_id] = Decision(False, "no decision before the timeout")
    return out


async def wait_for_approvals(
    name: str, calls: list[ApprovalCall], timeout: float | None = None
) -> dict[str, Decision]:
    """Ask people to approve `calls` and wait, durably, for every decision (by tool call id).

    The asking step is named `name + ".ask"`; the wait is a `ctx.recv`, so the run suspends
    and a replay returns the recorded answer. At `timeout` (seconds) every call is denied.
    """
    ctx = current_workflow_context()
    request = str(ctx.uuid4())
    asked = [
        {"tool_call_id": c.tool_call_id, "tool_name": c.tool_name, "arguments": c.arguments}
        for c in calls
    ]
    await ctx.step(record_requests, str(ctx.run_id), request, asked, name=f"{name}.ask")
    answer = await ctx.recv(store.answer_topic(request), timeout=timeout)
    return decisions_from(answer, calls)


def approvals(run_id: uuid.UUID | str) -> list[store.Approval]:
    """Every approval run `run_id` asked for, oldest first; `approved` is None while pending."""
    return store.approvals_of(as_run_id(run_id))


def decide(
    run_id: uuid.UUID | str,
    approval_id: str,
    approved: bool,
    reason: str | None = None,
    by: dict[str, Any] | None = None,
) -> store.Approval:
    """Approve or deny one approval, once, as the REST endpoint does (`by` says who); the run
    resumes when the last call of its request is decided. Raises ApprovalNotFound,
    ApprovalAlreadyDecided or RunFinished."""
    rid = as_run_id(run_id)
    decided, answer = store.decide(rid, approval_id, approved, reason, by)
    if answer is not None:
        key = store.answer_topic(decided.request)  # one answer per request, however it races
        send_message(rid, key, answer, idempotency_key=key, by=by)
    return decided


def resolve(run_id: uuid.UUID | str, token: str, payload: Any) -> None:
    """Answer an external-event wait of run `run_id` (pydantic-ai's `wait_for_external_event`,
    such as a `RequestInput` of your own for `CallDeferred` tools) with `payload`: the JSON
    its `ask` would have returned. Once per token; the run wakes and goes on."""
    topic = store.answer_topic(token)
    send_message(as_run_id(run_id), topic, payload, idempotency_key=topic)
