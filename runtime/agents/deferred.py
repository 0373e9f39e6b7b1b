"""`FanfoldApprovals`: pydantic-ai's deferred tool calls answered by people through Fanfold.

A deferred-calls capability (`TokenDeferredCalls`) whose handler records each call that needs
approval (`approval_requested`, with the tool's name and arguments) and answers nothing, so
the run waits in `FanfoldEventWaiter` until the approvals are decided over REST or in the
admin.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pydantic_ai.capabilities as capabilities
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, RunContext

from runtime.agents.approvals import current_workflow_context, record_requests
from runtime.durable.awaited import in_run_thread

# The capability whose handler `(ctx, requests, token)` gets a resume token. pydantic-ai 2.78
# folded `RequestInput` into `HandleDeferredToolCalls` (a handler with a third required
# parameter gets the token) and deprecated it; before, `HandleDeferredToolCalls` gave no token.
TokenDeferredCalls: Callable[..., capabilities.AbstractCapability[Any]] = (
    capabilities.HandleDeferredToolCalls
    if issubclass(capabilities.RequestInput, capabilities.HandleDeferredToolCalls)
    else capabilities.RequestInput
)


async def ask_people(
    ctx: RunContext[Any], requests: DeferredToolRequests, token: str
) -> DeferredToolResults | None:
    """Record the approvals `requests` asks for under `token`; the answer comes later."""
    if requests.calls:
        names = ", ".join(c.tool_name for c in requests.calls)
        raise ValueError(f"FanfoldApprovals answers approvals only, not external calls ({names})")
    calls = [
        {"tool_call_id": c.tool_call_id, "tool_name": c.tool_name, "arguments": c.args_as_dict()}
        for c in requests.approvals
    ]
    run_id = str(current_workflow_context().run_id)
    await in_run_thread(record_requests, run_id, str(uuid.UUID(token)), calls)
    return None


def FanfoldApprovals(
    timeout: timedelta | None = None, name: str = "approvals"
) -> capabilities.AbstractCapability[Any]:
    """The capability that sends an agent's `requires_approval` tool calls to people: add it
    next to `FanfoldDurability()`. At `timeout` every pending call is denied."""
    return TokenDeferredCalls(ask_people, timeout=timeout, name=name)
