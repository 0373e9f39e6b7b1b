"""AsyncDurableContext: the `ctx` of an `async def` workflow, whose calls that wait are awaited.

The sibling of the sync `DurableContext` (runtime.context) over the same replay cursor
(runtime.durable.base_context): `ctx.step`, `ctx.sleep`, `ctx.wait_for_condition`, `ctx.all`,
`ctx.map`, `ctx.recv`, `ctx.wait_for_signal` and a callback's `wait()` take their positions
when called and return an awaitable already under way (runtime.durable.awaited drives them),
so `asyncio.gather` of them replays in call order. The other calls stay plain.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Awaitable, Callable, Iterable
from datetime import timedelta
from typing import Any, Literal, ParamSpec, TypeVar, overload

from runtime.core.callbacks import as_seconds
from runtime.core.conditions import PollTerms
from runtime.core.errors import StepFailed
from runtime.core.retry import RetryPolicy
from runtime.durable import messaging, search, steps, updates
from runtime.durable.awaited import AsyncCallback, AwaitedCalls, Pending, in_run_thread
from runtime.durable.awaited import in_run_thread_now as now_in_run_thread
from runtime.durable.base_context import WorkflowContextBase, sleep_seconds
from runtime.durable.body import StepBody
from runtime.durable.callbacks import create_callback
from runtime.durable.conditions import wait_for_condition
from runtime.durable.updates import NEXT_UPDATE
from runtime.fanout.group import run_all
from runtime.registry import Signature, SignatureMap
from runtime.registry.shapes import Mappable, TaskLike, fan_out_of

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")


class AsyncDurableContext(WorkflowContextBase):
    """The `ctx` of an `async def` workflow: every call that waits is awaited."""

    @functools.cached_property
    def calls(self) -> AwaitedCalls:
        """The awaited calls this pass made (runtime.durable.awaited drives them)."""
        return AwaitedCalls()

    # -- steps ------------------------------------------------------------------------------

    @overload
    def step(
        self, fn: Callable[..., Awaitable[R]], /, *args: Any, name: str,
        retry: RetryPolicy | None = None, **kwargs: Any,
    ) -> Pending[R]: ...  # fmt: skip
    @overload
    def step(
        self, fn: Callable[..., R], /, *args: Any, name: str, retry: RetryPolicy | None = None,
        **kwargs: Any,
    ) -> Pending[R]: ...  # fmt: skip
    @overload
    def step(
        self, fn: Callable[..., Awaitable[R]], /, *args: Any, name: str | None = None,
        retry: RetryPolicy, **kwargs: Any,
    ) -> Pending[R]: ...  # fmt: skip
    @overload
    def step(
        self, fn: Callable[..., R], /, *args: Any, name: str | None = None, retry: RetryPolicy,
        **kwargs: Any,
    ) -> Pending[R]: ...  # fmt: skip
    @overload
    def step(
        self, fn: Callable[P, Awaitable[R]] | TaskLike[P, Awaitable[R]], /, *args: P.args,
        **kwargs: P.kwargs,
    ) -> Pending[R]: ...  # fmt: skip
    @overload
    def step(
        self, fn: Callable[P, R] | TaskLike[P, R], /, *args: P.args, **kwargs: P.kwargs
    ) -> Pending[R]: ...

    def step(
        self, fn: Any, /, *args: Any, name: Any = None, retry: Any = None, **kwargs: Any
    ) -> Any:
        """Run `fn(*args, **kwargs)` durably; await its result (memoized on replay). An
        `async def` body runs on this loop, a plain one in a thread. As the sync form, `name`
        and `retry` are the step's."""
        call = steps.resolve_step(self.cursor, fn, args, kwargs, name, retry)
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

    # -- timers -----------------------------------------------------------------------------

    def sleep(self, duration: float | timedelta) -> Pending[None]:
        """A durable timer: await it; the run suspends, holding no worker, until it fires."""
        seconds = sleep_seconds(duration)
        return self._call(f"ctx.sleep({seconds})", steps.sleep, seconds)

    def wait_for_condition(
        self,
        check: Callable[..., T | Literal[False] | None],
        *args: Any,
        interval: float | timedelta = 5.0,
        backoff: float = 1.0,
        max_interval: float | timedelta | None = None,
        timeout: float | timedelta | None = None,
    ) -> Pending[T]:
        """`DurableContext.wait_for_condition`, awaited."""
        terms = PollTerms.of(interval, backoff, max_interval, timeout)
        return self._call("ctx.wait_for_condition(...)", wait_for_condition, check, args, terms)

    # -- callbacks and fan-outs ---------------------------------------------------------------

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
        return AsyncCallback(now_in_run_thread(create, self.cursor), self.calls)

    @overload
    def all(
        self,
        signatures: Iterable[Signature[R]],
        *,
        max_concurrency: int | None = None,
        return_exceptions: Literal[False] = False,
        min_successful: int | None = None,
        tolerated_failures: int | None = None,
    ) -> Pending[list[R]]: ...
    @overload
    def all(
        self,
        signatures: Iterable[Signature[R]],
        *,
        max_concurrency: int | None = None,
        return_exceptions: bool,
        min_successful: int | None = None,
        tolerated_failures: int | None = None,
    ) -> Pending[list[R | StepFailed]]: ...

    def all(
        self,
        signatures: Iterable[Signature[Any]],
        *,
        max_concurrency: int | None = None,
        return_exceptions: bool = False,
        min_successful: int | None = None,
        tolerated_failures: int | None = None,
    ) -> Pending[list[Any]]:
        """`DurableContext.all`, awaited."""
        options = dict(
            max_concurrency=max_concurrency,
            return_exceptions=return_exceptions,
            min_successful=min_successful,
            tolerated_failures=tolerated_failures,
        )
        return self._fan_out(list(signatures), options)

    @overload
    def map(
        self,
        fn: Mappable[T, Awaitable[R]],
        items: Iterable[T],
        *,
        max_concurrency: int | None = None,
        return_exceptions: Literal[False] = False,
        min_successful: int | None = None,
        tolerated_failures: int | None = None,
    ) -> Pending[list[R]]: ...
    @overload
    def map(
        self,
        fn: Mappable[T, R],
        items: Iterable[T],
        *,
        max_concurrency: int | None = None,
        return_exceptions: Literal[False] = False,
        min_successful: int | None = None,
        tolerated_failures: int | None = None,
    ) -> Pending[list[R]]: ...
    @overload
    def map(
        self,
        fn: Mappable[T, Any],
        items: Iterable[T],
        *,
        max_concurrency: int | None = None,
        return_exceptions: bool,
        min_successful: int | None = None,
        tolerated_failures: int | None = None,
    ) -> Pending[list[Any]]: ...

    def map(
        self,
        fn: Mappable[Any, Any],
        items: Iterable[Any],
        *,
        max_concurrency: int | None = None,
        return_exceptions: bool = False,
        min_successful: int | None = None,
        tolerated_failures: int | None = None,
    ) -> Pending[list[Any]]:
        """`DurableContext.map`, awaited."""
        options = dict(
            max_concurrency=max_concurrency,
            return_exceptions=return_exceptions,
            min_successful=min_successful,
            tolerated_failures=tolerated_failures,
        )
        return self._fan_out(fan_out_of(fn, items), options)

    def _fan_out(
        self, signatures: list[Signature[Any]] | SignatureMap, options: dict[str, Any]
    ) -> Pending[list[Any]]:
        positions = [self.cursor.next_position() for _ in range(len(signatures))]
        fan_out = functools.partial(run_all, positions=positions, **options)
        return self.calls.start("ctx.all(...)", in_run_thread(fan_out, self.cursor, signatures))

    # -- messages, values and signals (runtime.messaging) -------------------------------------

    def recv(self, topic: str, timeout: float | timedelta | None = None) -> Pending[Any]:
        """`DurableContext.recv`, awaited."""
        seconds = as_seconds(timeout, "timeout")
        return self._call(f"ctx.recv({topic!r})", messaging.recv, topic, seconds)

    def wait_for_signal(
        self,
        name: str,
        match: dict[str, Any] | None = None,
        *,
        timeout: float | timedelta | None = None,
        lookback: float | timedelta | None = None,
    ) -> Pending[Any]:
        """`DurableContext.wait_for_signal`, awaited."""
        terms = (as_seconds(timeout, "timeout"), as_seconds(lookback, "lookback"))
        label = f"ctx.wait_for_signal({name!r})"
        return self._call(label, messaging.wait_for_signal, name, match, *terms)

    def set_value(self, key: str, value: Any) -> None:
        """`DurableContext.set_value` (plain: it returns once the value is recorded)."""
        self._call_now(messaging.set_value, key, value)

    def set_search(self, **values: Any) -> None:
        """`DurableContext.set_search` (plain: it returns once the values are recorded)."""
        self._call_now(search.set_search, values)

    def send_durably(
        self, run_id: uuid.UUID | str, topic: str, value: Any, idempotency_key: str | None
    ) -> int:
        """`runtime.send` from this workflow's code: sent once however often the run replays."""
        return int(self._call_now(messaging.send, run_id, topic, value, idempotency_key))

    def emit_durably(self, name: str, payload: Any, idempotency_key: str | None) -> int:
        """`runtime.emit_signal` from this workflow's code: emitted once across replays."""
        emit = messaging.emit_signal
        return int(self._call_now(emit, name, payload, idempotency_key, positioned=False))

    def next_update(
        self, *names: str, timeout: float | timedelta | None = None
    ) -> Pending[updates.Update | None]:
        """`DurableContext.next_update`, awaited; `upd.reply` / `upd.reject` stay plain."""
        seconds = as_seconds(timeout, "timeout")
        return self._call(NEXT_UPDATE, updates.next_update, names, seconds, self._answer_update)

    def _answer_update(self, *answer: Any) -> None:
        self._call_now(updates.answer, *answer)

    # -- how a durable call is made here ----------------------------------------------------

    def _call(self, label: str, fn: Callable[..., Any], *args: Any) -> Pending[Any]:
        """Take the call's position now and start `fn(cursor, *args)` in the run's thread:
        awaited later (`label` names it in errors and logs)."""
        call = functools.partial(fn, position=self.cursor.next_position())
        return self.calls.start(label, in_run_thread(call, self.cursor, *args))

    def _call_now(self, fn: Callable[..., Any], *args: Any, positioned: bool = True) -> Any:
        """Run `fn(cursor, *args)` in the run's thread and return its result (a plain call;
        `positioned`: it takes the next position)."""
        if positioned:
            fn = functools.partial(fn, position=self.cursor.next_position())
        return now_in_run_thread(fn, self.cursor, *args)
