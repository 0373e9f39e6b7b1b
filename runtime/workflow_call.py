"""The context a workflow gets, and the call of its code: a sync workflow gets a
`DurableContext`, an `async def` one an `AsyncDurableContext` whose calls that wait are
awaited (runtime.durable.awaited drives them)."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from runtime.async_context import AsyncDurableContext
from runtime.context import DurableContext
from runtime.core import history
from runtime.core.clock import Clock
from runtime.core.current import workflow_sender
from runtime.core.errors import FanfoldError
from runtime.durable.awaited import run_async_workflow
from runtime.durable.body import is_async_callable
from runtime.durable.cursor import ReplayCursor
from runtime.durable.session import ExecutionSession

T = TypeVar("T")
WorkflowContext = DurableContext | AsyncDurableContext


def new_workflow_context(
    fn: Callable[..., Any],
    session: ExecutionSession,
    recorded: dict[int, history.RecordedStep],
    clock: Clock,
    *,
    cursor: ReplayCursor | None = None,
) -> WorkflowContext:
    """Build the context workflow `fn` gets for this pass: an `AsyncDurableContext` for an
    `async def` workflow, else a `DurableContext`."""
    kind = AsyncDurableContext if is_async_callable(fn) else DurableContext
    return kind(session, recorded, clock, cursor=cursor)


def call_workflow(
    fn: Callable[..., Any], ctx: WorkflowContext, args: list[Any], kwargs: dict[str, Any]
) -> Any:
    """Run workflow code `fn(ctx, *args, **kwargs)` to its end (or its suspension) from the
    run's thread, on a loop of its own if it is async."""
    with workflow_sender(ctx):
        if isinstance(ctx, AsyncDurableContext):
            return run_async_workflow(fn, ctx, ctx.calls, args, kwargs)
        return fn(ctx, *args, **kwargs)


def run_async_from_sync(
    ctx: DurableContext, fn: Callable[..., Coroutine[Any, Any, T]], *args: Any, **kwargs: Any
) -> T:
    """`await fn(*args, **kwargs)` run from sync workflow code, whose durable calls (made
    through `runtime.core.current.active_workflow()`) take the workflow's next positions
    as an async workflow's would: a step or wait inside suspends the whole run alike. They
    go through an `AsyncDurableContext` over the sync one's cursor (its sibling)."""
    if not isinstance(ctx, DurableContext):
        raise FanfoldError("run_async_from_sync is for sync workflows: await the call instead")
    view = ctx.sibling(AsyncDurableContext)

    async def call(_: Any) -> T:
        return await fn(*args, **kwargs)

    with workflow_sender(view):
        result: T = run_async_workflow(call, view, view.calls, [], {})
        return result
