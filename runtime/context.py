"""DurableContext: what workflow code calls. Every call here is replay-safe.

A workflow runs as ordinary Python. Each durable call takes the next position of the run's
`ReplayCursor`; if the history already holds that position the recorded outcome is returned
(or re-raised) without running the body again, otherwise the call runs and is checkpointed
before it returns. Callbacks (runtime.durable.callbacks) and fan-outs (runtime.fanout) go
through the same cursor.
"""

from __future__ import annotations

import dataclasses
import logging
import random as _random
import uuid
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any

from runtime import conf
from runtime.core import history
from runtime.core.callbacks import as_seconds
from runtime.core.clock import Clock
from runtime.core.conditions import PollTerms
from runtime.core.identity import deterministic_uuid
from runtime.core.retry import RetryPolicy
from runtime.durable import calls, messaging, search, steps
from runtime.durable.callbacks import Callback, create_callback
from runtime.durable.conditions import wait_for_condition
from runtime.durable.cursor import ReplayCursor
from runtime.durable.markers import patched
from runtime.durable.session import ExecutionSession
from runtime.fanout.group import run_all
from runtime.registry import Signature, SignatureMap, StepFunction, WorkflowFunction

log = logging.getLogger("fanfold.workflow")


class _ReplayAwareLogger(logging.LoggerAdapter[logging.Logger]):
    def __init__(self, ctx: DurableContext) -> None:
        super().__init__(log, {"run_id": str(ctx.run_id)})
        self._ctx = ctx

    def isEnabledFor(self, level: int) -> bool:
        return not self._ctx.is_replaying and super().isEnabledFor(level)


class DurableContext:
    """The `ctx` argument of every workflow."""

    def __init__(
        self,
        session: ExecutionSession,
        recorded: dict[int, history.RecordedStep],
        clock: Clock,
        rand: Callable[[], float] = _random.random,
        *,
        cursor: ReplayCursor | None = None,
    ) -> None:
        self.cursor = cursor or ReplayCursor(session, recorded, clock, conf.get().MAX_PAYLOAD_BYTES)
        self._clock = clock
        self._rand = rand
        self._uuid_counter = 0
        self.logger: logging.LoggerAdapter[logging.Logger] = _ReplayAwareLogger(self)

    # -- deterministic helpers -----------------------------------------------------------

    @property
    def run_id(self) -> uuid.UUID:
        return self.cursor.run_id

    @property
    def is_replaying(self) -> bool:
        """True while the workflow re-executes positions the history already holds."""
        return self.cursor.is_replaying

    @property
    def fatal(self) -> BaseException | None:
        """The error that fails the run even though workflow code caught it, if any."""
        return self.cursor.fatal

    def now(self) -> datetime:
        """The current time, recorded so that replay sees the same value."""
        return datetime.fromisoformat(
            calls.record_value(self.cursor, "ctx.now", lambda: self._clock.now().isoformat())
        )

    def uuid4(self) -> uuid.UUID:
        """A UUID derived from the run and a call counter: the same on every replay."""
        self._uuid_counter += 1
        return deterministic_uuid(self.run_id, self._uuid_counter)

    def random(self) -> float:
        """A float in [0, 1), recorded so that replay sees the same value."""
        return float(calls.record_value(self.cursor, "ctx.random", self._rand))

    def patched(self, patch_id: str) -> bool:
        """True on new code paths: a run that reaches this call for the first time records a
        marker and gets True; a run whose history passed here without it gets False."""
        return patched(self.cursor, patch_id)

    # -- steps ------------------------------------------------------------------------------

    def step(
        self,
        fn: Callable[..., Any],
        *args: Any,
        name: str | None = None,
        retry: RetryPolicy | None = None,
        **kwargs: Any,
    ) -> Any:
        """Run `fn(*args, **kwargs)` durably and return its result (memoized on replay)."""
        call = steps.resolve_step(self.cursor, fn, args, kwargs, name, retry)
        return self._run_step(call)

    def _run_step(self, call: steps.StepCall) -> Any:
        return steps.run_step(self.cursor, call, self._rand)

    def _step_ending_run(
        self, fn: Callable[..., Any], *args: Any, name: str, retry: RetryPolicy, **kwargs: Any
    ) -> Any:
        """`step` for a workflow that returns the step's result at once (runtime.django_tasks
        .runner): the step's completion commits with the run's end, in one transaction."""
        call = steps.resolve_step(self.cursor, fn, args, kwargs, name, retry)
        return self._run_step(dataclasses.replace(call, ends_run=True))

    # -- timers -----------------------------------------------------------------------------

    def sleep(self, duration: float | timedelta) -> Any:
        """A durable timer: the run suspends, holding no worker, and resumes after `duration`."""
        seconds = duration.total_seconds() if isinstance(duration, timedelta) else duration
        if not isinstance(seconds, int | float) or isinstance(seconds, bool) or seconds < 0:
            raise ValueError("ctx.sleep takes a non-negative number of seconds or a timedelta")
        return self._call(f"ctx.sleep({seconds})", steps.sleep, float(seconds))

    def wait_for_condition(
        self,
        check: Callable[..., Any],
        *args: Any,
        interval: float | timedelta = 5.0,
        backoff: float = 1.0,
        max_interval: float | timedelta | None = None,
        timeout: float | timedelta | None = None,
    ) -> Any:
        """Poll `check(*args)` durably until it returns something other than None/False.

        Between polls the run sleeps durably (no worker held), `interval` growing by `backoff`
        up to `max_interval`. Raises ConditionTimedOut after `timeout`; an exception from
        `check` fails the wait at once (StepFailed, no retry). All polls are one step record.
        """
        terms = PollTerms.of(interval, backoff, max_interval, timeout)
        return self._call("ctx.wait_for_condition(...)", wait_for_condition, check, args, terms)

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

    def all(
        self,
        signatures: Iterable[Signature],
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
        return self._fan_out(
            list(signatures),
            max_concurrency=max_concurrency,
            return_exceptions=return_exceptions,
            min_successful=min_successful,
            tolerated_failures=tolerated_failures,
        )

    def map(
        self,
        fn: StepFunction[Any, Any] | WorkflowFunction[Any],
        items: Iterable[Any],
        *,
        max_concurrency: int | None = None,
        return_exceptions: bool = False,
        min_successful: int | None = None,
        tolerated_failures: int | None = None,
    ) -> list[Any]:
        """`ctx.all` over `fn.s(item)` for each item: a registered step, or a registered
        workflow (then each item runs as a child workflow)."""
        if not isinstance(fn, StepFunction | WorkflowFunction):
            raise TypeError("ctx.map takes a registered @step or @workflow function")
        return self._fan_out(
            SignatureMap(fn.name, fn.signature_kind, list(items)),
            max_concurrency=max_concurrency,
            return_exceptions=return_exceptions,
            min_successful=min_successful,
            tolerated_failures=tolerated_failures,
        )

    def _fan_out(self, signatures: list[Signature] | SignatureMap, **options: Any) -> Any:
        return run_all(self.cursor, signatures, **options)

    # -- messages, values and signals (runtime.messaging) -------------------------------------

    def recv(self, topic: str, timeout: float | timedelta | None = None) -> Any:
        """The oldest message on `topic` this run has not received yet, or None after
        `timeout`. Until one arrives the run suspends (no worker held); the message is recorded
        (`message_received`), so a replay returns the same one."""
        seconds = as_seconds(timeout, "timeout")
        return self._call(f"ctx.recv({topic!r})", messaging.recv, topic, seconds)

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
        label = f"ctx.wait_for_signal({name!r})"
        return self._call(label, messaging.wait_for_signal, name, match, *terms)

    def set_value(self, key: str, value: Any) -> None:
        """Record `value` as this run's latest value of `key` (`value_set`), readable from
        outside with `get_run(id).get_value(key)` once it commits."""
        self._call_now(messaging.set_value, key, value)

    def set_search(self, **values: Any) -> None:
        """Change this run's search attributes (declared by its workflow), durably: recorded
        as `search_set` and answered from the history on replay (runtime.durable.search)."""
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

    # -- how a durable call is made: at once here, as an awaited call in an async workflow -----

    def _call(self, label: str, fn: Callable[..., Any], *args: Any) -> Any:
        """The durable call `fn(cursor, *args)` that waits (`label` names it in an async
        workflow's errors and logs)."""
        return fn(self.cursor, *args)

    def _call_now(self, fn: Callable[..., Any], *args: Any, positioned: bool = True) -> Any:
        """The durable call `fn(cursor, *args)` that returns at once (`positioned`: it takes
        the next position)."""
        return fn(self.cursor, *args)
