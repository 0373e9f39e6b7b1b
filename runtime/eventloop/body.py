"""What the worker loop runs: one submitted body, and the timeout that bounds it."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from runtime.core.errors import StepTimedOut

T = TypeVar("T")

BodyFactory = Callable[[], Awaitable[T]]


@dataclass(frozen=True)
class BodyTag:
    """Which body a piece of loop work belongs to: its group `key` (a run id) and `label`
    (a step name). Carried by a context variable, so tasks a body spawns inherit it."""

    key: Hashable
    label: str


@dataclass(eq=False)
class Body:
    """One submitted body: how to make its awaitable, its tag and bound, whom to tell."""

    factory: BodyFactory[Any]
    tag: BodyTag
    timeout: float | None
    future: concurrent.futures.Future[Any]
    context: contextvars.Context
    task: asyncio.Task[None] | None = field(default=None)
    settled: bool = field(default=False)

    # A cancelled concurrent future counts as done for `concurrent.futures.wait` only once its
    # owner calls `set_running_or_notify_cancel()`, as an executor would; the two methods
    # below make that call once per body, on the loop thread.

    def settle(self, result: Any = None, error: BaseException | None = None) -> None:
        """Hand the body's outcome to its future, unless the future was cancelled."""
        if self._claim():
            if error is None:
                self.future.set_result(result)
            else:
                self.future.set_exception(error)

    def settle_cancelled(self) -> None:
        """Report the body cancelled, unless its future already has an outcome."""
        self.future.cancel()
        self._claim()

    def _claim(self) -> bool:
        if self.settled:
            return False
        self.settled = True
        return self.future.set_running_or_notify_cancel()


async def bounded(awaitable: Awaitable[T], seconds: float | None, label: str) -> T:
    """Await `awaitable`, cancelling it after `seconds` (None: no bound).

    A body cut by the bound raises `StepTimedOut` naming `label`; a `TimeoutError` the body
    raises on its own (an HTTP client's, say) goes through unchanged.
    """
    if seconds is None:
        return await awaitable
    scope = asyncio.timeout(seconds)
    try:
        async with scope:
            return await awaitable
    except TimeoutError as exc:
        if scope.expired():
            raise StepTimedOut(label=label, seconds=seconds) from exc
        raise
