"""DurableContext: what workflow code calls. Every call here is replay-safe.

A workflow runs as ordinary Python. Each durable call takes the next position; if the history
already holds that position the recorded outcome is returned (or re-raised) without running the
body again, otherwise the call runs and is checkpointed before it returns.
"""

from __future__ import annotations

import logging
import random as _random
import uuid
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any

from runtime import conf
from runtime.core import history as h
from runtime.core.clock import Clock
from runtime.core.errors import (
    FanfoldError,
    NonDeterminismError,
    StepFailed,
    describe_exception,
)
from runtime.core.identity import check_name, deterministic_uuid, step_id
from runtime.core.jsonvalues import checked
from runtime.core.retry import DEFAULT_POLICY, GiveUp, RetryPolicy, decide
from runtime.core.writes import EventDraft, HistoryWrite, StepRow
from runtime.registry import Signature, StepFunction
from runtime.session import ExecutionSession
from runtime.stepinfo import StepInfo, running

log = logging.getLogger("fanfold.workflow")


class Suspend(BaseException):
    """Unwinds the workflow to park the run until `wake_at` (None: until something wakes it)."""

    def __init__(self, wake_at: datetime | None) -> None:
        super().__init__(wake_at)
        self.wake_at = wake_at


class StepInterrupted(FanfoldError):
    """An attempt began and never reported (its worker died). At-most-once steps never run
    such an attempt again; any step whose interrupted attempt was its last fails with this."""

    code = "step_interrupted"


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
        recorded: dict[int, h.RecordedStep],
        clock: Clock,
        rand: Callable[[], float] = _random.random,
    ) -> None:
        self._session = session
        self._recorded = recorded
        self._last_recorded = max(recorded, default=0)
        self._clock = clock
        self._rand = rand
        self._position = 0
        self._uuid_counter = 0
        self._limit = conf.get().MAX_PAYLOAD_BYTES
        self.fatal: BaseException | None = None  # set when user code swallowed a fatal error
        self.logger: logging.LoggerAdapter[logging.Logger] = _ReplayAwareLogger(self)

    # -- deterministic helpers -----------------------------------------------------------

    @property
    def run_id(self) -> uuid.UUID:
        return self._session.run_id

    @property
    def is_replaying(self) -> bool:
        """True while the workflow re-executes positions the history already holds."""
        return self._position < self._last_recorded

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
        if not callable(fn):
            raise TypeError("ctx.step takes a callable as its first argument")
        registered = fn if isinstance(fn, StepFunction) else None
        body = registered.fn if registered else fn
        step_name = check_name(
            name or (registered.name if registered else str(getattr(fn, "__name__", repr(fn)))),
            "step",
        )
        policy = retry or (registered.retry if registered else None) or DEFAULT_POLICY
        at_most_once = bool(registered and registered.at_most_once)
        position = self._next_position()
        action = self._identity_checked(
            lambda: h.next_step_action(
                self._recorded.get(position),
                step_name,
                self._clock.now(),
                at_most_once=at_most_once,
                max_attempts=policy.max_attempts,
            )
        )
        if isinstance(action, h.ReturnRecorded):
            return action.result
        if isinstance(action, h.RaiseRecorded):
            raise StepFailed.from_record(step_name, position, action.error)
        if isinstance(action, h.WaitUntil):
            raise Suspend(action.wake_at)
        what = f"step {step_name!r}"
        step_input, input_bytes = self._checked(
            {"args": list(args), "kwargs": kwargs}, f"{what} input"
        )
        if isinstance(action, h.Interrupted):
            kind = "at-most-once " if at_most_once else ""
            interrupted = StepInterrupted(
                f"attempt {action.attempt} of {kind}{what} was interrupted; it is not run again"
            )
            return self._after_failure(
                position, step_name, step_input, action.attempt, interrupted, policy
            )
        if not isinstance(action, h.RunAttempt):
            raise TypeError(f"unexpected replay action {action!r} for a step")
        return self._run_attempt(
            position,
            step_name,
            body,
            args,
            kwargs,
            (step_input, input_bytes),
            action,
            policy,
            at_most_once,
        )

    def _run_attempt(
        self,
        position: int,
        name: str,
        body: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        checked_input: tuple[Any, int],
        action: h.RunAttempt,
        policy: RetryPolicy,
        at_most_once: bool,
    ) -> Any:
        step_input, input_bytes = checked_input
        sid = step_id(self.run_id, position)
        started = self._clock.now()
        events: list[EventDraft] = []
        if action.fresh:
            events.append(_created(sid, position, name, "step", step_input, started))
        events.append(EventDraft("step_started", started, sid, {"attempt": action.attempt}))
        started_row = StepRow(
            sid,
            position,
            name,
            "step",
            h.RUNNING,
            action.attempt,
            started,
            input=step_input,
            started_at=started,
        )
        # An at-most-once start must be durable before the body runs; an at-least-once start
        # is queued and usually commits together with the completion.
        self._write(events, started_row, sync=at_most_once, payload_bytes=input_bytes)
        try:
            with running(StepInfo(self.run_id, position, name, action.attempt)):
                raw = body(*args, **kwargs)
            result, result_bytes = self._checked(raw, f"step {name!r} result")
        except (Suspend, KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:
            return self._after_failure(position, name, step_input, action.attempt, exc, policy)
        finished = self._clock.now()
        done = StepRow(
            sid,
            position,
            name,
            "step",
            h.COMPLETED,
            action.attempt,
            started,
            input=step_input,
            result=result,
            started_at=started,
            finished_at=finished,
        )
        completed = EventDraft(
            "step_completed", finished, sid, {"attempt": action.attempt, "result": result}
        )
        self._write([completed], done, sync=True, payload_bytes=input_bytes + result_bytes)
        return result

    def _after_failure(
        self,
        position: int,
        name: str,
        step_input: Any,
        attempt: int,
        exc: BaseException,
        policy: RetryPolicy,
    ) -> Any:
        sid = step_id(self.run_id, position)
        now = self._clock.now()
        error = describe_exception(exc)
        decision = decide(policy, attempt, exc, self._rand)
        if isinstance(decision, GiveUp):
            row = StepRow(
                sid,
                position,
                name,
                "step",
                h.FAILED,
                attempt,
                now,
                input=step_input,
                error=error,
                finished_at=now,
            )
            failed = EventDraft(
                "step_failed",
                now,
                sid,
                {"attempt": attempt, "error": error, "reason": decision.reason},
            )
            self._write([failed], row, sync=True)
            raise StepFailed.from_record(name, position, error) from exc
        wake_at = now + timedelta(seconds=decision.delay)
        row = StepRow(
            sid,
            position,
            name,
            "step",
            h.PENDING,
            attempt,
            now,
            input=step_input,
            error=error,
            wake_at=wake_at,
        )
        retrying = EventDraft(
            "step_retrying",
            now,
            sid,
            {
                "attempt": attempt,
                "delay": decision.delay,
                "wake_at": wake_at.isoformat(),
                "error": error,
            },
        )
        self._write([retrying], row, sync=False)  # the suspend that follows commits it
        raise Suspend(wake_at)

    # -- timers -----------------------------------------------------------------------------

    def sleep(self, duration: float | timedelta) -> None:
        """A durable timer: the run suspends, holding no worker, and resumes after `duration`."""
        seconds = duration.total_seconds() if isinstance(duration, timedelta) else duration
        if not isinstance(seconds, int | float) or isinstance(seconds, bool) or seconds < 0:
            raise ValueError("ctx.sleep takes a non-negative number of seconds or a timedelta")
        position = self._next_position()
        now = self._clock.now()
        action = self._identity_checked(
            lambda: h.next_sleep_action(self._recorded.get(position), "sleep", now)
        )
        if isinstance(action, h.ReturnRecorded):
            return
        if isinstance(action, h.RaiseRecorded):
            raise StepFailed.from_record("sleep", position, action.error)
        if isinstance(action, h.WaitUntil):
            raise Suspend(action.wake_at)
        sid = step_id(self.run_id, position)
        if isinstance(action, h.TimerFired):
            started = self._recorded[position].started_at
            row = StepRow(
                sid,
                position,
                "sleep",
                "sleep",
                h.COMPLETED,
                1,
                now,
                started_at=started,
                finished_at=now,
            )
            self._write([EventDraft("wait_completed", now, sid, {})], row, sync=False)
            return
        wake_at = now + timedelta(seconds=float(seconds))
        row = StepRow(
            sid,
            position,
            "sleep",
            "sleep",
            h.RUNNING,
            1,
            now,
            input={"seconds": float(seconds)},
            started_at=now,
            wake_at=wake_at,
        )
        events = [
            _created(sid, position, "sleep", "sleep", {"seconds": float(seconds)}, now),
            EventDraft(
                "wait_created",
                now,
                sid,
                {"seconds": float(seconds), "wake_at": wake_at.isoformat()},
            ),
        ]
        self._write(events, row, sync=False)
        raise Suspend(wake_at)

    # -- callbacks live in runtime.callbacks, fan-out in runtime.fanout ---------------------

    def create_callback(
        self,
        name: str,
        *,
        timeout: float | timedelta | None = None,
        heartbeat_timeout: float | timedelta | None = None,
    ) -> Any:
        """A callback with an unguessable `.token`; `.wait()` suspends until it is posted."""
        from runtime.callbacks import create_callback

        return create_callback(self, name, timeout=timeout, heartbeat_timeout=heartbeat_timeout)

    def all(self, signatures: Iterable[Signature], **options: Any) -> list[Any]:
        """Run registered steps or child workflows in parallel; results in signature order."""
        from runtime.fanout import run_all

        return run_all(self, list(signatures), **options)

    def map(
        self, step_fn: StepFunction[Any, Any], items: Iterable[Any], **options: Any
    ) -> list[Any]:
        """`ctx.all` over `step_fn.s(item)` for each item."""
        if not isinstance(step_fn, StepFunction):
            raise TypeError("ctx.map takes a registered @step function")
        return self.all([step_fn.s(item) for item in items], **options)

    # -- plumbing -----------------------------------------------------------------------------

    def _next_position(self) -> int:
        if self.fatal is not None:
            # User code swallowed a NonDeterminismError: the history no longer matches, so no
            # later durable call may run a body, record anything or suspend the run.
            raise self.fatal
        self._position += 1
        return self._position

    def _identity_checked(self, decide_action: Callable[[], h.StepAction]) -> h.StepAction:
        try:
            return decide_action()
        except NonDeterminismError as exc:
            self.fatal = exc  # user code catching it must not hide it
            raise

    def _checked(self, value: Any, what: str) -> tuple[Any, int]:
        return checked(value, what, self._limit)

    def _record_value(self, name: str, produce: Callable[[], Any]) -> Any:
        position = self._next_position()
        recorded = self._recorded.get(position)
        if recorded is not None:
            self._identity_checked(lambda: _value_action(recorded, name))
            return recorded.result
        value = produce()
        now = self._clock.now()
        sid = step_id(self.run_id, position)
        row = StepRow(
            sid,
            position,
            name,
            "step",
            h.COMPLETED,
            1,
            now,
            result=value,
            started_at=now,
            finished_at=now,
        )
        events = [
            _created(sid, position, name, "step", None, now),
            EventDraft("step_completed", now, sid, {"attempt": 1, "result": value}),
        ]
        # Async is enough: anything that depends on the value durably commits after it (FIFO).
        self._write(events, row, sync=False)
        return value

    def _write(
        self, events: list[EventDraft], row: StepRow, *, sync: bool, payload_bytes: int = 0
    ) -> None:
        self._session.checkpoint(
            HistoryWrite(self.run_id, self._session.guard, tuple(events), (row,)),
            sync=sync,
            payload_bytes=payload_bytes,
        )
        self._recorded[row.position] = h.RecordedStep.of(row)


def _value_action(recorded: h.RecordedStep, name: str) -> h.StepAction:
    h.check_identity(recorded, name, "step")
    return h.ReturnRecorded(recorded.result)


def _created(
    sid: uuid.UUID, position: int, name: str, kind: str, step_input: Any, at: datetime
) -> EventDraft:
    return EventDraft(
        "step_created",
        at,
        sid,
        {"position": position, "name": name, "kind": kind, "input": step_input},
    )
