"""The context a workflow gets, and the call of its code: `AsyncDurableContext` for an
`async def` workflow, whose calls that wait are awaited (runtime.durable.awaited drives them)."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Coroutine
from datetime import timedelta
from typing import Any, TypeVar, cast

from runtime.context import DurableContext
from runtime.core import history
from runtime.core.clock import Clock
from runtime.core.current import workflow_sender
from runtime.core.errors import FanfoldError
from runtime.durable import steps
from runtime.durable.awaited import (
    AsyncCallback,
    AwaitedCalls,
    Pending,
    in_run_thread,
    in_run_thread_now,
    run_async_workflow,
)
from runtime.durable.body import StepBody, is_async_callable
from runtime.durable.callbacks import create_callback
from runtime.durable.cursor import ReplayCursor
from runtime.durable.session import ExecutionSession
from runtime.durable.updates import Update
from runtime.fanout.group import run_all
from runtime.registry import Signature, SignatureMap

T = TypeVar("T")


def workflow_context(
    fn: Callable[..., Any],
    session: ExecutionSession,
    recorded: dict[int, history.RecordedStep],
    clock: Clock,
    *,
    cursor: ReplayCursor | None = None,
) -> DurableContext:
    """The context workflow `fn` gets: awaited calls for an `async def` workflow."""
    kind = AsyncDurableContext if is_async_callable(fn) else DurableContext
    return kind(session, recorded, clock, cursor=cursor)


def call_workflow(
    fn: Callable[..., Any], ctx: DurableContext, args: list[Any], kwargs: dict[str, Any]
) -> Any:
    """Run workflow code `fn(ctx, *args, **kwargs)` to its end (or its suspension) from the
    run's thread, on a loop of its own if it is async."""
    with workflow_sender(ctx):
        if isinstance(ctx, AsyncDurableContext):
            return run_async_workflow(fn, ctx, ctx.calls, args, kwargs)
        return fn(ctx, *args, **kwargs)


class AsyncDurableContext(DurableContext):
    """The `ctx` of an `async def` workflow: every call that waits is awaited.

    `ctx.step`, `ctx.sleep`, `ctx.wait_for_condition`, `ctx.all`, `ctx.map` and a callback's
    `wait()` take their positions when called and return an awaitable that is already under
    way, so `asyncio.gather` of them replays in call order. The other calls stay plain.
    """

    @functools.cached_property
    def calls(self) -> AwaitedCalls:
        """The awaited calls this pass made (runtime.durable.awaited drives them)."""
        return AwaitedCalls()

    def _run_step(self, call: steps.StepCall) -> Pending[Any]:
        return self.calls.start(f"ctx.step({call.name!r})", self._step(call))

    async def _step(self, call: steps.StepCall) -> Any:
        cursor = self.cursor
        begun = await in_run_thread(steps.begin_step, cursor, call, self._rand)
        if isinstance(begun, steps.Answered):
            return begun.result
        prepared, body_call = begun
        with StepBody(body_call) as body:
            outcome = await body.arun(cursor.payload_limit)
            return await in_run_thread(prepared.finish, body, outcome)

    def _call(self, label: str, fn: Callable[..., Any], *args: Any) -> Pending[Any]:
        """Take the call's position now and start it in the run's thread: awaited later."""
        call = functools.partial(fn, position=self.cursor.next_position())
        return self.calls.start(label, in_run_thread(call, self.cursor, *args))

    def _call_now(self, fn: Callable[..., Any], *args: Any, positioned: bool = True) -> Any:
        """Run the call in the run's thread and return its result (a plain call)."""
        if positioned:
            fn = functools.partial(fn, position=self.cursor.next_position())
        return in_run_thread_now(fn, self.cursor, *args)

    def _fan_out(self, signatures: list[Signature] | SignatureMap, **options: Any) -> Pending[Any]:
        positions = [self.cursor.next_position() for _ in range(len(signatures))]
        fan_out = functools.partial(run_all, positions=positions, **options)
        return self.calls.start("ctx.all(...)", in_run_thread(fan_out, self.cursor, signatures))

    def next_update(  # type: ignore[override]
        self, *names: str, timeout: float | timedelta | None = None
    ) -> Pending[Update | None]:
        """`await ctx.next_update(...)`: the next accepted update, or None after `timeout`."""
        return cast(Pending[Update | None], super().next_update(*names, timeout=timeout))

    def create_callback(
        self,
        name: str,
        *,
        timeout: float | timedelta | None = None,
        heartbeat_timeout: float | timedelta | None = None,
    ) -> AsyncCallback:
        """A callback with an unguessable `.token`; `await callback.wait()` for its payload.
        Created (and committed) before it returns, like the sync form."""
        create = functools.partial(
            create_callback, name=name, timeout=timeout, heartbeat_timeout=heartbeat_timeout
        )
        return AsyncCallback(in_run_thread_now(create, self.cursor), self.calls)


class SyncWorkflowView(AsyncDurableContext):
    """An async view of a sync workflow's `ctx`: the same cursor (positions, history, writes)
    and the same `uuid4` counter, for async code that a sync workflow runs to its end
    (`run_async_from_sync`)."""

    def __init__(self, ctx: DurableContext) -> None:
        cursor = ctx.cursor
        super().__init__(cursor.session, {}, cursor.clock, ctx._rand, cursor=cursor)
        self._sync = ctx

    def uuid4(self) -> uuid.UUID:
        return self._sync.uuid4()


def run_async_from_sync(
    ctx: DurableContext, fn: Callable[..., Coroutine[Any, Any, T]], *args: Any, **kwargs: Any
) -> T:
    """`await fn(*args, **kwargs)` run from sync workflow code, whose durable calls (made
    through `runtime.core.current.active_workflow()`) take the workflow's next positions
    as an async workflow's would: a step or wait inside suspends the whole run alike."""
    if isinstance(ctx, AsyncDurableContext):
        raise FanfoldError("run_async_from_sync is for sync workflows: await the call instead")
    view = SyncWorkflowView(ctx)

    async def call(_: Any) -> T:
        return await fn(*args, **kwargs)

    with workflow_sender(view):
        return cast(T, run_async_workflow(call, view, view.calls, [], {}))
