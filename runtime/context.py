"""DurableContext: what sync workflow code calls. Every call here is replay-safe.

A workflow runs as ordinary Python. Each durable call takes the next position of the run's
`ReplayCursor`; if the history already holds that position the recorded outcome is returned
(or re-raised) without running the body again, otherwise the call runs and is checkpointed
before it returns. Callbacks (runtime.durable.callbacks) and fan-outs (runtime.fanout) go
through the same cursor. An `async def` workflow gets the sibling `AsyncDurableContext`
(runtime.async_context); what both share is runtime.durable.base_context's.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Awaitable, Callable, Iterable
from datetime import timedelta
from typing import Any, Literal, ParamSpec, TypeVar, overload

from runtime.core.callbacks import as_seconds
from runtime.core.conditions import PollTerms
from runtime.core.errors import StepFailed
from runtime.core.retry import RetryPolicy
from runtime.durable import messaging, search, steps, updates
from runtime.durable.base_context import WorkflowContextBase, sleep_seconds
from runtime.durable.callbacks import Callback, create_callback
from runtime.durable.conditions import wait_for_condition
from runtime.durable.parking import parks
from runtime.fanout.group import run_all
from runtime.registry import Signature
from runtime.registry.shapes import Mappable, TaskLike, fan_out_of

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")


class DurableContext(WorkflowContextBase):
    """The `ctx` argument of every sync workflow."""

    # -- steps ------------------------------------------------------------------------------

    @overload
    def step(
        self, fn: Callable[..., Awaitable[R]], /, *args: Any, name: str,
        retry: RetryPolicy | None = None, **kwargs: Any,
    ) -> R: ...  # fmt: skip
    @overload
    def step(
        self, fn: Callable[..., R], /, *args: Any, name: str, retry: RetryPolicy | None = None,
        **kwargs: Any,
    ) -> R: ...  # fmt: skip
    @overload
    def step(
        self, fn: Callable[..., Awaitable[R]], /, *args: Any, name: str | None = None,
        retry: RetryPolicy, **kwargs: Any,
    ) -> R: ...  # fmt: skip
    @overload
    def step(
        self, fn: Callable[..., R], /, *args: Any, name: str | None = None, retry: RetryPolicy,
        **kwargs: Any,
    ) -> R: ...  # fmt: skip
    @overload
    def step(
        self, fn: Callable[P, Awaitable[R]] | TaskLike[P, Awaitable[R]], /, *args: P.args,
        **kwargs: P.kwargs,
    ) -> R: ...  # fmt: skip
    @overload
    def step(
        self, fn: Callable[P, R] | TaskLike[P, R], /, *args: P.args, **kwargs: P.kwargs
    ) -> R: ...

    @parks
    def step(
        self, fn: Any, /, *args: Any, name: Any = None, retry: Any = None, **kwargs: Any
    ) -> Any:
        """Run `fn(*args, **kwargs)` durably and return its result (memoized on replay).

        `fn` is a function (an `async def` one runs to its end), a registered `@step`, or a
        Django task. `name` and `retry` are the step's, not `fn`'s: given them, a type checker
        checks the result's type but not `fn`'s arguments.
        """
        call = steps.resolve_step(self.cursor, fn, args, kwargs, name, retry)
        return steps.run_step(self.cursor, call, self._rand)

    def step_ending_run(
        self, fn: Callable[..., R], *args: Any, name: str, retry: RetryPolicy, **kwargs: Any
    ) -> R:
        """`step` for a workflow that returns the step's result at once (runtime.django_tasks
        .runner): the step's completion commits with the run's end, in one transaction."""
        call = steps.resolve_step(self.cursor, fn, args, kwargs, name, retry)
        ending = dataclasses.replace(call, ends_run=True)
        return steps.run_step(self.cursor, ending, self._rand)

    # -- timers -----------------------------------------------------------------------------

    @parks
    def sleep(self, duration: float | timedelta) -> None:
        """A durable timer: the run suspends, holding no worker, and resumes after `duration`."""
        steps.sleep(self.cursor, sleep_seconds(duration))

    @parks
    def wait_for_condition(
        self,
        check: Callable[..., T | Literal[False] | None],
        *args: Any,
        interval: float | timedelta = 5.0,
        backoff: float = 1.0,
        max_interval: float | timedelta | None = None,
        timeout: float | timedelta | None = None,
    ) -> T:
        """Poll `check(*args)` durably until it returns something other than None/False.

        Between polls the run sleeps durably (no worker held), `interval` growing by `backoff`
        up to `max_interval`. Raises ConditionTimedOut after `timeout`; an exception from
        `check` fails the wait at once (StepFailed, no retry). All polls are one step record.
        """
        terms = PollTerms.of(interval, backoff, max_interval, timeout)
        return wait_for_condition(self.cursor, check, args, terms)

    # -- callbacks and fan-outs ---------------------------------------------------------------

    def create_callback(
        self,
        name: str,
        *,
        timeout: float | timedelta | None = None,
        heartbeat_timeout: float | timedelta | None = None,
    ) -> Callback:
        """A callback with an unguessable `.token`; `.wait()` suspends until it is posted."""
        return create_callback(
            self.cursor, name, timeout=timeout, heartbeat_timeout=heartbeat_timeout
        )

    @overload
    def all(
        self,
        signatures: Iterable[Signature[R]],
        *,
        max_concurrency: int | None = None,
        return_exceptions: Literal[False] = False,
        min_successful: int | None = None,
        tolerated_failures: int | None = None,
    ) -> list[R]: ...
    @overload
    def all(
        self,
        signatures: Iterable[Signature[R]],
        *,
        max_concurrency: int | None = None,
        return_exceptions: bool,
        min_successful: int | None = None,
        tolerated_failures: int | None = None,
    ) -> list[R | StepFailed]: ...

    @parks
    def all(
        self,
        signatures: Iterable[Signature[Any]],
        *,
        max_concurrency: int | None = None,
        return_exceptions: bool = False,
        min_successful: int | None = None,
        tolerated_failures: int | None = None,
    ) -> list[Any]:
        """Run registered steps or child workflows in parallel; results in signature order.

        If the fan-out fails (a branch failed for good, more than `tolerated_failures` did, or
        `min_successful` became unreachable) raises `StepFailed` for the first failed branch
        in the event log. With `return_exceptions=True` failed branches appear in place as
        `StepFailed` objects. `min_successful` succeeds early and cancels the unfinished rest.
        """
        return run_all(
            self.cursor,
            list(signatures),
            max_concurrency=max_concurrency,
            return_exceptions=return_exceptions,
            min_successful=min_successful,
            tolerated_failures=tolerated_failures,
        )

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
    ) -> list[R]: ...
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
    ) -> list[R]: ...
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
    ) -> list[Any]: ...

    @parks
    def map(
        self,
        fn: Mappable[Any, Any],
        items: Iterable[Any],
        *,
        max_concurrency: int | None = None,
        return_exceptions: bool = False,
        min_successful: int | None = None,
        tolerated_failures: int | None = None,
    ) -> list[Any]:
        """`ctx.all` over `fn.s(item)` for each item: a registered step, a Django task, or a
        registered workflow (then each item runs as a child workflow)."""
        return run_all(
            self.cursor,
            fan_out_of(fn, items),
            max_concurrency=max_concurrency,
            return_exceptions=return_exceptions,
            min_successful=min_successful,
            tolerated_failures=tolerated_failures,
        )

    # -- messages, values and signals (runtime.messaging) -------------------------------------

    @parks
    def recv(self, topic: str, timeout: float | timedelta | None = None) -> Any:
        """The oldest message on `topic` this run has not received yet, or None after
        `timeout`. Until one arrives the run suspends (no worker held); the message is recorded
        (`message_received`), so a replay returns the same one."""
        return messaging.recv(self.cursor, topic, as_seconds(timeout, "timeout"))

    @parks
    def wait_for_signal(
        self,
        name: str,
        match: dict[str, Any] | None = None,
        *,
        timeout: float | timedelta | None = None,
        lookback: float | timedelta | None = None,
    ) -> Any:
        """The payload of a signal `name` whose top-level items include every item of `match`
        (a flat dict of JSON scalars), or None after `timeout`. With `lookback`, a signal
        emitted up to that long before the wait began counts too (the earliest such one)."""
        terms = (as_seconds(timeout, "timeout"), as_seconds(lookback, "lookback"))
        return messaging.wait_for_signal(self.cursor, name, match, *terms)

    def set_value(self, key: str, value: Any) -> None:
        """Record `value` as this run's latest value of `key` (`value_set`), readable from
        outside with `get_run(id).get_value(key)` once it commits."""
        messaging.set_value(self.cursor, key, value)

    def set_search(self, **values: Any) -> None:
        """Change this run's search attributes (declared by its workflow), durably: recorded
        as `search_set` and answered from the history on replay (runtime.durable.search)."""
        search.set_search(self.cursor, values)

    def send_durably(
        self, run_id: uuid.UUID | str, topic: str, value: Any, idempotency_key: str | None
    ) -> int:
        """`runtime.send` from this workflow's code: sent once however often the run replays."""
        return int(messaging.send(self.cursor, run_id, topic, value, idempotency_key))

    def emit_durably(self, name: str, payload: Any, idempotency_key: str | None) -> int:
        """`runtime.emit_signal` from this workflow's code: emitted once across replays."""
        return int(messaging.emit_signal(self.cursor, name, payload, idempotency_key))

    # -- updates (runtime.durable.updates) ------------------------------------------------------

    @parks
    def next_update(
        self, *names: str, timeout: float | timedelta | None = None
    ) -> updates.Update | None:
        """The next accepted update (one of `names`, any when none), in arrival order, or None
        after `timeout`. Until one arrives the run suspends (no worker held); answer it with
        `upd.reply(value)` or `upd.reject(reason)`, durably."""
        seconds = as_seconds(timeout, "timeout")
        return updates.next_update(self.cursor, names, seconds, self._answer_update)

    def _answer_update(self, *answer: Any) -> None:
        updates.answer(self.cursor, *answer)
