"""DurableContext: what workflow code calls. Every call here is replay-safe.

A workflow runs as ordinary Python. Each durable call takes the next position of the run's
`ReplayCursor`; if the history already holds that position the recorded outcome is returned
(or re-raised) without running the body again, otherwise the call runs and is checkpointed
before it returns. Callbacks (runtime.durable.callbacks) and fan-outs (runtime.fanout) go
through the same cursor.
"""

from __future__ import annotations

import logging
import random as _random
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from runtime import conf
from runtime.core import history
from runtime.core.clock import Clock
from runtime.core.conditions import PollTerms
from runtime.core.control import Suspend
from runtime.core.errors import StepFailed, StepInterrupted, describe_exception
from runtime.core.identity import check_name, deterministic_uuid, step_id
from runtime.core.retry import DEFAULT_POLICY, GiveUp, RetryPolicy, decide
from runtime.core.writes import EventDraft, StepRow, step_created
from runtime.durable.callbacks import Callback, create_callback
from runtime.durable.conditions import wait_for_condition
from runtime.durable.cursor import ReplayCursor
from runtime.durable.markers import patched
from runtime.durable.session import ExecutionSession
from runtime.durable.stepinfo import StepInfo, running
from runtime.fanout.group import run_all
from runtime.flow.ratelimit import turn_wait
from runtime.observe.attempts import StepAttempt
from runtime.registry import Signature, SignatureMap, StepFunction, WorkflowFunction

log = logging.getLogger("fanfold.workflow")


class _ReplayAwareLogger(logging.LoggerAdapter[logging.Logger]):
    def __init__(self, ctx: DurableContext) -> None:
        super().__init__(log, {"run_id": str(ctx.run_id)})
        self._ctx = ctx

    def isEnabledFor(self, level: int) -> bool:
        return not self._ctx.is_replaying and super().isEnabledFor(level)


@dataclass(frozen=True)
class _StepCall:
    """One `ctx.step` call, resolved: what runs, under which name and policy, where."""

    position: int
    name: str
    body: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    policy: RetryPolicy
    at_most_once: bool


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
            self._record_value("ctx.now", lambda: self._clock.now().isoformat())
        )

    def uuid4(self) -> uuid.UUID:
        """A UUID derived from the run and a call counter: the same on every replay."""
        self._uuid_counter += 1
        return deterministic_uuid(self.run_id, self._uuid_counter)

    def random(self) -> float:
        """A float in [0, 1), recorded so that replay sees the same value."""
        return float(self._record_value("ctx.random", self._rand))

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
        call = self._resolve(fn, args, kwargs, name, retry)
        recorded = self.cursor.recorded(call.position)
        action = self.cursor.identity_checked(
            lambda: history.next_step_action(
                recorded,
                call.name,
                self._clock.now(),
                at_most_once=call.at_most_once,
                max_attempts=call.policy.max_attempts,
            )
        )
        if isinstance(action, history.ReturnRecorded):
            return action.result
        if isinstance(action, history.RaiseRecorded):
            raise StepFailed.from_record(call.name, call.position, action.error)
        if isinstance(action, history.WaitUntil):
            raise Suspend(action.wake_at)
        step_input = self.cursor.checked(
            {"args": list(args), "kwargs": kwargs}, f"step {call.name!r} input"
        )
        if isinstance(action, history.Interrupted):
            kind = "at-most-once " if call.at_most_once else ""
            interrupted = StepInterrupted(
                f"attempt {action.attempt} of {kind}step {call.name!r} was interrupted; "
                "it is not run again"
            )
            return self._after_failure(call, step_input[0], action.attempt, interrupted)
        if not isinstance(action, history.RunAttempt):
            raise TypeError(f"unexpected replay action {action!r} for a step")
        turn = turn_wait(fn, self.run_id, call.position, action.attempt)  # `rate_limit=` only
        if turn is not None:
            raise Suspend(turn)  # no worker waits for the turn; the attempt keeps it
        with StepAttempt(self.run_id, call.name, call.position, action.attempt) as observed:
            try:
                result = self._run_attempt(call, step_input, action)
            except Suspend:
                observed.outcome = "retrying"  # a failed attempt suspends until its retry
                raise
            observed.outcome = "completed"
            return result

    def _resolve(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        name: str | None,
        retry: RetryPolicy | None,
    ) -> _StepCall:
        if not callable(fn):
            raise TypeError("ctx.step takes a callable as its first argument")
        registered = fn if isinstance(fn, StepFunction) else None
        default_name = registered.name if registered else str(getattr(fn, "__name__", repr(fn)))
        step_name = check_name(name or default_name, "step")
        policy = retry or (registered.retry if registered else None) or DEFAULT_POLICY
        return _StepCall(
            position=self.cursor.next_position(),
            name=step_name,
            body=registered.fn if registered else fn,
            args=args,
            kwargs=kwargs,
            policy=policy,
            at_most_once=bool(registered and registered.at_most_once),
        )

    def _run_attempt(
        self, call: _StepCall, checked_input: tuple[Any, int], action: history.RunAttempt
    ) -> Any:
        step_input, input_bytes = checked_input
        sid = step_id(self.run_id, call.position)
        started = self._clock.now()
        events: list[EventDraft] = []
        if action.fresh:
            events.append(step_created(sid, call.position, call.name, "step", step_input, started))
        events.append(EventDraft("step_started", started, sid, {"attempt": action.attempt}))
        row = StepRow(sid, call.position, call.name, "step", history.RUNNING, action.attempt,
                      started, input=step_input, started_at=started)  # fmt: skip
        # An at-most-once start must be durable before the body runs; an at-least-once start
        # is queued and usually commits together with the completion.
        self.cursor.write(events, row, sync=call.at_most_once, payload_bytes=input_bytes)
        try:
            with running(StepInfo(self.run_id, call.position, call.name, action.attempt)):
                raw = call.body(*call.args, **call.kwargs)
            result, result_bytes = self.cursor.checked(raw, f"step {call.name!r} result")
        except (Suspend, KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:
            return self._after_failure(call, step_input, action.attempt, exc)
        finished = self._clock.now()
        done = StepRow(sid, call.position, call.name, "step", history.COMPLETED, action.attempt,
                       started, input=step_input, result=result, started_at=started,
                       finished_at=finished)  # fmt: skip
        completed = EventDraft(
            "step_completed", finished, sid, {"attempt": action.attempt, "result": result}
        )
        self.cursor.write([completed], done, sync=True, payload_bytes=input_bytes + result_bytes)
        return result

    def _after_failure(
        self, call: _StepCall, step_input: Any, attempt: int, exc: BaseException
    ) -> Any:
        sid = step_id(self.run_id, call.position)
        now = self._clock.now()
        error = describe_exception(exc)
        decision = decide(call.policy, attempt, exc, self._rand)
        if isinstance(decision, GiveUp):
            row = StepRow(sid, call.position, call.name, "step", history.FAILED, attempt, now,
                          input=step_input, error=error, finished_at=now)  # fmt: skip
            payload = {"attempt": attempt, "error": error, "reason": decision.reason}
            self.cursor.write([EventDraft("step_failed", now, sid, payload)], row, sync=True)
            raise StepFailed.from_record(call.name, call.position, error) from exc
        wake_at = now + timedelta(seconds=decision.delay)
        row = StepRow(sid, call.position, call.name, "step", history.PENDING, attempt, now,
                      input=step_input, error=error, wake_at=wake_at)  # fmt: skip
        payload = {
            "attempt": attempt,
            "delay": decision.delay,
            "wake_at": wake_at.isoformat(),
            "error": error,
        }
        retrying = EventDraft("step_retrying", now, sid, payload)
        self.cursor.write([retrying], row, sync=False)  # the suspend that follows commits it
        raise Suspend(wake_at)

    # -- timers -----------------------------------------------------------------------------

    def sleep(self, duration: float | timedelta) -> None:
        """A durable timer: the run suspends, holding no worker, and resumes after `duration`."""
        seconds = duration.total_seconds() if isinstance(duration, timedelta) else duration
        if not isinstance(seconds, int | float) or isinstance(seconds, bool) or seconds < 0:
            raise ValueError("ctx.sleep takes a non-negative number of seconds or a timedelta")
        position = self.cursor.next_position()
        now = self._clock.now()
        recorded = self.cursor.recorded(position)
        action = self.cursor.identity_checked(
            lambda: history.next_sleep_action(recorded, "sleep", now)
        )
        if isinstance(action, history.ReturnRecorded):
            return
        if isinstance(action, history.RaiseRecorded):
            raise StepFailed.from_record("sleep", position, action.error)
        if isinstance(action, history.WaitUntil):
            raise Suspend(action.wake_at)
        sid = step_id(self.run_id, position)
        if isinstance(action, history.TimerFired):
            started = recorded.started_at if recorded else None
            row = StepRow(sid, position, "sleep", "sleep", history.COMPLETED, 1, now,
                          started_at=started, finished_at=now)  # fmt: skip
            self.cursor.write([EventDraft("wait_completed", now, sid, {})], row, sync=False)
            return
        wake_at = now + timedelta(seconds=float(seconds))
        sleep_input = {"seconds": float(seconds)}
        row = StepRow(sid, position, "sleep", "sleep", history.RUNNING, 1, now,
                      input=sleep_input, started_at=now, wake_at=wake_at)  # fmt: skip
        events = [
            step_created(sid, position, "sleep", "sleep", sleep_input, now),
            EventDraft("wait_created", now, sid, {**sleep_input, "wake_at": wake_at.isoformat()}),
        ]
        self.cursor.write(events, row, sync=False)
        raise Suspend(wake_at)

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
        return run_all(
            self.cursor,
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
        return run_all(
            self.cursor,
            SignatureMap(fn.name, fn.signature_kind, list(items)),
            max_concurrency=max_concurrency,
            return_exceptions=return_exceptions,
            min_successful=min_successful,
            tolerated_failures=tolerated_failures,
        )

    # -- plumbing -----------------------------------------------------------------------------

    def _record_value(self, name: str, produce: Callable[[], Any]) -> Any:
        position = self.cursor.next_position()
        recorded = self.cursor.recorded(position)
        if recorded is not None:
            self.cursor.identity_checked(lambda: _value_action(recorded, name))
            return recorded.result
        value = produce()
        now = self._clock.now()
        sid = step_id(self.run_id, position)
        row = StepRow(sid, position, name, "step", history.COMPLETED, 1, now, result=value,
                      started_at=now, finished_at=now)  # fmt: skip
        events = [
            step_created(sid, position, name, "step", None, now),
            EventDraft("step_completed", now, sid, {"attempt": 1, "result": value}),
        ]
        # Async is enough: anything that depends on the value durably commits after it (FIFO).
        self.cursor.write(events, row, sync=False)
        return value


def _value_action(recorded: history.RecordedStep, name: str) -> history.StepAction:
    history.check_identity(recorded, name, "step")
    return history.ReturnRecorded(recorded.result)
