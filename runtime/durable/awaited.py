"""How an async workflow runs: a coroutine on a loop of its own, the database in the run's thread.

`run_async_workflow` drives the workflow with asgiref's `async_to_sync`: the coroutine runs on
a new event loop in a helper thread while the run's own thread (the Celery task's) serves every
call that touches the database, one at a time, on its connection (`sync_to_async` with
`thread_sensitive=True`). Django's own async ORM calls inside async steps land there too.

Each awaited context call takes its positions when it is called and starts at once as a task
(`Pending`), so `asyncio.gather(ctx.step(a), ctx.step(b))` records `a` before `b` whatever
finishes first. When the workflow ends, every call still in flight is waited for: a run that
suspends wakes at the earliest of its calls' wake-ups, and a call that was never awaited fails
the run with a clear error instead of being lost.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Coroutine, Generator
from datetime import datetime
from typing import Any, TypeVar

from asgiref.sync import AsyncToSync, async_to_sync, sync_to_async

from runtime.core.control import Suspend
from runtime.core.current import in_workflow
from runtime.core.errors import FanfoldError, NotAwaited
from runtime.durable.callbacks import Callback

T = TypeVar("T")


async def in_run_thread(fn: Callable[..., T], *args: Any) -> T:
    """Run `fn(*args)` in the run's thread and await its result (the loop keeps running)."""
    return await sync_to_async(functools.partial(fn, *args), thread_sensitive=True)()


def in_run_thread_now(fn: Callable[..., T], *args: Any) -> T:
    """Run `fn(*args)` in the run's thread and wait for it here, holding the loop: for plain
    context calls (not awaited) whose write must commit before they return."""
    executor = AsyncToSync.loop_thread_executors.get(asyncio.get_running_loop())
    if executor is None:  # not driven by run_async_workflow: nothing else can serve it
        raise FanfoldError("this context call needs the run's thread: await it in a workflow")
    return executor.submit(fn, *args).result()


class Pending(Awaitable[T]):
    """A context call in flight: awaitable once or more, like the task it wraps."""

    __slots__ = ("awaited", "task", "what")

    def __init__(self, what: str, task: asyncio.Task[T]) -> None:
        self.what = what
        self.task = task
        self.awaited = False

    def __await__(self) -> Generator[Any, None, T]:
        self.awaited = True
        return self.task.__await__()

    def __repr__(self) -> str:
        return f"<pending {self.what}>"


class AwaitedCalls:
    """The context calls an async workflow made in this pass."""

    def __init__(self) -> None:
        self._calls: list[Pending[Any]] = []

    def start(self, what: str, work: Coroutine[Any, Any, T]) -> Pending[T]:
        """Start `work` now as a task of the running loop; returns what the caller awaits."""
        pending = Pending(what, asyncio.get_running_loop().create_task(work))
        self._calls.append(pending)
        return pending

    async def settle(self) -> list[BaseException]:
        """Wait for every call still in flight; the exceptions of those that raised."""
        tasks = [p.task for p in self._calls]
        if tasks:
            await asyncio.wait(tasks)
        return [exc for t in tasks if not t.cancelled() and (exc := t.exception()) is not None]

    def never_awaited(self) -> list[str]:
        return [p.what for p in self._calls if not p.awaited]


class AsyncCallback:
    """A callback created by an async workflow: hand out `.token`, then `await .wait()`.
    The async sibling of `Callback`, over the same record."""

    def __init__(self, callback: Callback, calls: AwaitedCalls) -> None:
        self.name = callback.name
        self.token = callback.token
        self._callback = callback
        self._calls = calls

    def __repr__(self) -> str:
        return repr(self._callback)

    def wait(self) -> Pending[Any]:
        """Await the posted result; raises CallbackFailed or CallbackTimedOut."""
        wait = in_run_thread(self._callback.wait)
        return self._calls.start(f"callback {self.name!r}.wait()", wait)


def earliest_wake(suspends: list[Suspend]) -> datetime | None:
    """When a run that suspended on all of these must wake: the earliest timer among them
    (None when none has a timer: something else, a post or a notification, wakes it)."""
    return min((s.wake_at for s in suspends if s.wake_at is not None), default=None)


def run_async_workflow(
    fn: Callable[..., Coroutine[Any, Any, Any]],
    ctx: Any,
    calls: AwaitedCalls,
    args: list[Any],
    kwargs: dict[str, Any],
) -> Any:
    """Run the async workflow `fn(ctx, *args, **kwargs)` from the run's (sync) thread."""
    return async_to_sync(_drive)(fn, ctx, calls, args, kwargs)


async def _drive(
    fn: Callable[..., Coroutine[Any, Any, Any]],
    ctx: Any,
    calls: AwaitedCalls,
    args: list[Any],
    kwargs: dict[str, Any],
) -> Any:
    ended: BaseException | None = None
    result: Any = None
    try:
        with in_workflow(ctx):
            result = await fn(ctx, *args, **kwargs)
    except BaseException as exc:  # settled below, after the calls still in flight
        ended = exc
    raised = await calls.settle()
    suspends = [e for e in [ended, *raised] if isinstance(e, Suspend)]
    if isinstance(ended, Suspend):
        raise Suspend(earliest_wake(suspends)) from None
    if ended is not None:
        raise ended
    forgotten = calls.never_awaited()
    if forgotten:
        raise NotAwaited(
            f"the workflow returned without awaiting {', '.join(forgotten)}: in an async "
            "workflow every call that waits (ctx.step, ctx.sleep, ctx.all, ...) is awaited"
        )
    return result
