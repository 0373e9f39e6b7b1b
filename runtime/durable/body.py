"""The one place a step body runs: inline steps, condition polls and fan-out branches alike.

`StepBody` is one attempt of one body. Entered, it is the attempt as metrics and spans see it
(`runtime.observe.attempts.StepAttempt`); its `run()` is the only call of user step code in
the runtime: the body runs with its `StepInfo` current, is timed, and its result is checked as
a JSON value within the payload limit. A failure of user code comes back as the outcome's
`error` for the caller to record; control flow (`Suspend`) and interpreter exits pass through.
The caller records the outcome and sets `.outcome` (the attempt's label) before the block ends.

Bodies may be `async def`. Called from sync code (`run()`: a sync workflow, a branch task) an
async body runs to completion on an event loop of its own (asgiref's `async_to_sync`, so the
Django ORM calls it makes through `sync_to_async` run in the calling thread, on its
connection). Awaited from an async workflow (`arun()`) an async body runs on the workflow's
loop, and a sync body in the run's own thread (`sync_to_async`), never on the loop. A body
that returns an awaitable instead of a value is refused: an awaitable is never recorded.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from time import perf_counter
from types import TracebackType
from typing import Any

from asgiref.sync import async_to_sync, sync_to_async

from runtime.core.control import Suspend
from runtime.core.current import StepInfo, running
from runtime.core.errors import FatalError
from runtime.core.jsonvalues import checked
from runtime.durable import body_time
from runtime.eventloop.body import bounded
from runtime.observe.attempts import StepAttempt

# Results that cannot be awaitables, checked by type before the slower isawaitable.
_PLAIN_RESULTS = frozenset({type(None), bool, int, float, str, list, dict, tuple})
_FUNCTIONS = (types.FunctionType, types.MethodType, types.BuiltinFunctionType, functools.partial)


@dataclass(frozen=True)
class BodyCall:
    """What one attempt runs: the body, its arguments, and who it is (`info`).

    `what` names the body in errors about its result ("step 'x'", "condition 'x'")."""

    info: StepInfo
    fn: Callable[..., Any]
    args: Sequence[Any] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    what: str = ""
    timeout: float | None = None  # an async body's bound (`@step(timeout=...)`)


@dataclass(frozen=True)
class BodyOutcome:
    """How a body ended: its checked result and that result's size, or the error it raised.

    `seconds` is the body's own time (its result check excluded)."""

    result: Any = None
    size: int = 0
    error: BaseException | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None


# Chooses what one attempt runs (runtime.testing's step mocks, which also count the calls).
BodySubstitute = Callable[[BodyCall], BodyCall]
_substitute: BodySubstitute | None = None


def install_body_substitute(substitute: BodySubstitute | None) -> BodySubstitute | None:
    """Pass every body call through `substitute` before it runs (a test environment's mocks
    and call log); returns the one it replaces."""
    global _substitute
    previous, _substitute = _substitute, substitute
    return previous


class StepBody:
    """`with StepBody(call) as body: outcome = body.run(limit); ...; body.outcome = "..."`."""

    __slots__ = ("_observed", "call")

    def __init__(self, call: BodyCall, traceparent: str | None = None) -> None:
        self.call = call if _substitute is None else _substitute(call)
        info = call.info
        self._observed = StepAttempt(
            info.run_id, info.name, info.position, info.attempt, traceparent
        )

    @property
    def outcome(self) -> str:
        """The attempt's label for metrics and spans; "failed" unless the caller says more."""
        return self._observed.outcome

    @outcome.setter
    def outcome(self, label: str) -> None:
        self._observed.outcome = label

    def __enter__(self) -> StepBody:
        self._observed.__enter__()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._observed.__exit__(kind, exc, tb)

    def run(self, max_bytes: int) -> BodyOutcome:
        """Call the body once and check its result; every failure of user code is returned."""
        started = perf_counter()
        try:
            raw = self._call_here()
            return self._checked(raw, started, max_bytes)
        except (Suspend, KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # every failure of user code is the caller's to record
            return BodyOutcome(error=exc, seconds=perf_counter() - started)
        finally:
            body_time.add(perf_counter() - started)

    async def arun(self, max_bytes: int) -> BodyOutcome:
        """`run()` for async callers: an async body is awaited here, a sync one runs in the
        run's own thread. Cancellation reaches the body and is not an outcome: it propagates."""
        call = self.call
        started = perf_counter()
        try:
            if is_async_callable(call.fn):
                with running(call.info):
                    raw = await self._bounded()
            else:
                raw = await sync_to_async(self._call_here, thread_sensitive=True)()
            return self._checked(raw, started, max_bytes)
        except (Suspend, KeyboardInterrupt, SystemExit, asyncio.CancelledError):
            raise
        except BaseException as exc:  # every failure of user code is the caller's to record
            return BodyOutcome(error=exc, seconds=perf_counter() - started)

    def _call_here(self) -> Any:
        call = self.call
        with running(call.info):
            if is_async_callable(call.fn):
                return async_to_sync(self._bounded)()
            return call.fn(*call.args, **call.kwargs)

    async def _bounded(self) -> Any:
        call = self.call
        return await bounded(call.fn(*call.args, **call.kwargs), call.timeout, call.info.name)

    def _checked(self, raw: Any, started: float, max_bytes: int) -> BodyOutcome:
        seconds = perf_counter() - started
        what = self.call.what or repr(self.call.info.name)
        if type(raw) not in _PLAIN_RESULTS and inspect.isawaitable(raw):
            if inspect.iscoroutine(raw):
                raw.close()  # never awaited: closed so that it warns of nothing
            raise FatalError(
                f"{what} returned an awaitable instead of a value: make the step an "
                "`async def` function so that it is awaited"
            )
        result, size = checked(raw, f"{what} result", max_bytes)
        return BodyOutcome(result, size, None, seconds)


def is_async_callable(fn: Callable[..., Any]) -> bool:
    """Whether calling `fn` makes a coroutine: an `async def` function, a partial of one, or
    an object whose `__call__` is one."""
    if inspect.iscoroutinefunction(fn):
        return True
    if isinstance(fn, _FUNCTIONS):
        return False  # the common case, decided without looking at __call__
    return inspect.iscoroutinefunction(getattr(fn, "__call__", None))  # noqa: B004
