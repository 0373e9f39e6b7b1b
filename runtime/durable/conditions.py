"""`ctx.wait_for_condition`: poll a check durably, sleeping between polls, in ONE step record.

The step's attempts are the polls. An unmet poll records `step_retrying` with the next poll's
time and suspends the run (no worker held) until then; a met poll completes the step with the
check's result; an exception from the check fails the step at once (no retry), and a timeout
fails it with `ConditionTimedOut`. Replay reads the one record, so the history a resumed run
loads does not grow with the number of polls.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from runtime.core import history
from runtime.core.conditions import TIMED_OUT, PollTerms, met, timed_out_error
from runtime.core.control import Suspend
from runtime.core.current import StepInfo
from runtime.core.errors import ConditionTimedOut, StepFailed, describe_exception
from runtime.core.identity import check_name
from runtime.core.states import EventType, StepKind, StepStatus
from runtime.core.writes import EventDraft, StepRow
from runtime.durable.body import BodyCall, StepBody
from runtime.durable.calls import DurableCall
from runtime.durable.cursor import ReplayCursor
from runtime.registry import StepFunction


@dataclass(frozen=True)
class _Poll:
    """One poll about to run: what, its call (the one step record of every poll), its attempt."""

    call: DurableCall
    body: Callable[..., Any]
    args: tuple[Any, ...]
    terms: PollTerms
    attempt: int

    @property
    def first_poll(self) -> datetime:
        """Since when the wait has been polling (its step's start)."""
        return self.call.started

    def row(self, status: str, **fields: Any) -> StepRow:
        return self.call.row(status, attempt=self.attempt, **fields)

    def event(self, kind: str, now: datetime, **payload: Any) -> EventDraft:
        return self.call.event(kind, {"attempt": self.attempt, **payload}, now)


def wait_for_condition(
    cursor: ReplayCursor,
    check: Callable[..., Any],
    args: tuple[Any, ...],
    terms: PollTerms,
    position: int | None = None,
) -> Any:
    """Poll `check(*args)` until it returns something other than None/False (see module).
    `position` is the one an async workflow took at the call (else the cursor's next)."""
    if not callable(check):
        raise TypeError("ctx.wait_for_condition takes a callable as its first argument")
    registered = check if isinstance(check, StepFunction) else None
    name = check_name(
        registered.name if registered else getattr(check, "__name__", "check"), "step"
    )
    position = cursor.next_position() if position is None else position
    call = DurableCall(cursor, position, name, StepKind.STEP)
    now = call.now
    action = history.next_step_action(call.recorded, name, now, at_most_once=False)
    if isinstance(action, history.ReturnRecorded):
        return action.result
    if isinstance(action, history.RaiseRecorded):
        raise _recorded_failure(name, position, action.error)
    if isinstance(action, history.WaitUntil):
        raise Suspend(action.wake_at)
    if not isinstance(action, history.RunAttempt):
        raise TypeError(f"unexpected replay action {action!r} for a condition")
    call.step_input, _ = cursor.checked(
        {"args": list(args), "kwargs": {}, "poll": terms.as_input()}, f"condition {name!r} input"
    )
    body = registered.fn if registered else check
    poll = _Poll(call, body, args, terms, action.attempt)
    return _run_poll(poll, fresh=action.fresh, now=now)


def _recorded_failure(name: str, position: int, error: dict[str, Any] | None) -> Exception:
    if error and error.get("type") == TIMED_OUT:
        return ConditionTimedOut(str(error.get("message", "")))
    return StepFailed.from_record(name, position, error)


def _run_poll(poll: _Poll, *, fresh: bool, now: datetime) -> Any:
    call = poll.call
    cursor = call.cursor
    events = [poll.event(EventType.STEP_STARTED, now)]
    if fresh:
        events.insert(0, call.announced(now))
    cursor.write(events, poll.row(StepStatus.RUNNING), sync=False)
    info = StepInfo(cursor.run_id, call.position, call.name, poll.attempt)
    with StepBody(BodyCall(info, poll.body, poll.args, {}, f"condition {call.name!r}")) as body:
        outcome = body.run(cursor.payload_limit)
        if outcome.error is not None:
            error, at = describe_exception(outcome.error), cursor.clock.now()
            failed = poll.event(EventType.STEP_FAILED, at, error=error, reason="check raised")
            row = poll.row(StepStatus.FAILED, error=error, finished_at=at)
            cursor.write([failed], row, sync=True)
            raise StepFailed.from_record(call.name, call.position, error) from outcome.error
        done, value = cursor.clock.now(), outcome.result
        if met(value):
            completed = poll.event(EventType.STEP_COMPLETED, done, result=value)
            row = poll.row(StepStatus.COMPLETED, result=value, finished_at=done)
            cursor.write([completed], row, sync=True)
            body.outcome = "completed"
            return value
        body.outcome = "retrying"  # an unmet poll suspends until the next one, or times out
        return _after_unmet(poll, value, done)


def _after_unmet(poll: _Poll, value: Any, now: datetime) -> Any:
    call = poll.call
    wake_at = poll.terms.next_poll(poll.first_poll, poll.attempt, now)
    if wake_at is None:
        error = timed_out_error(call.name, poll.terms, poll.attempt)
        failed = poll.event(EventType.STEP_FAILED, now, error=error, reason="timeout")
        row = poll.row(StepStatus.FAILED, error=error, finished_at=now)
        call.cursor.write([failed], row, sync=True)
        raise ConditionTimedOut(error["message"])
    delay = (wake_at - now).total_seconds()
    retrying = poll.event(
        EventType.STEP_RETRYING, now, delay=delay, wake_at=wake_at.isoformat(), result=value
    )
    row = poll.row(StepStatus.PENDING, result=value, wake_at=wake_at)
    call.cursor.write([retrying], row, sync=False)  # the suspend that follows commits it
    raise Suspend(wake_at)
