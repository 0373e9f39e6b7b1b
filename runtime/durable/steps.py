"""`ctx.step` and `ctx.sleep`: the step methods of DurableContext.

Each takes the next position of the run's cursor. If the history already holds it the recorded
outcome is returned (or re-raised) without running the body again; otherwise the body runs
through the one body runner (runtime.durable.body) and its outcome is checkpointed before the
call returns. A failed attempt either fails the step for good or records its retry and
suspends the run until then.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NoReturn

from runtime.core import history
from runtime.core.control import Suspend
from runtime.core.current import StepInfo, StepOutbox
from runtime.core.errors import StepFailed, StepInterrupted, describe_exception
from runtime.core.identity import check_name, step_id
from runtime.core.retry import GiveUp, RetryPolicy, decide
from runtime.core.states import EventType, StepKind, StepStatus
from runtime.core.writes import EventDraft, StepRow, step_created
from runtime.durable.body import BodyCall, BodyOutcome, StepBody
from runtime.durable.calls import DurableCall
from runtime.durable.cursor import ReplayCursor
from runtime.flow.ratelimit import turn_wait
from runtime.process.identity import worker_id
from runtime.registry import StepFunction, registry, step_policy


@dataclass(frozen=True)
class StepCall:
    """One `ctx.step` call, resolved: what runs, under which name and policy, where."""

    position: int
    name: str
    body: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    policy: RetryPolicy
    at_most_once: bool
    registered: StepFunction[Any, Any] | None
    # The workflow returns this step's result at once (a Django task's run): its completion
    # is queued to commit with the run's end, one transaction where there were two. A crash
    # between them loses only what the step would have run again anyway (at least once).
    ends_run: bool = False


def resolve_step(
    cursor: ReplayCursor,
    fn: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    name: str | None,
    retry: RetryPolicy | None,
) -> StepCall:
    """The call `ctx.step(fn, *args, name=, retry=, **kwargs)` makes, at the next position."""
    registered = fn if isinstance(fn, StepFunction) else None
    if registered is None and not callable(fn):
        registered = registry.step_for(fn)  # a Django task (runtime.django_tasks.steps)
        if registered is None:
            raise TypeError("ctx.step takes a callable, a registered step or a Django task")
    default_name = registered.name if registered else str(getattr(fn, "__name__", repr(fn)))
    return StepCall(
        position=cursor.next_position(),
        name=check_name(name or default_name, "step"),
        body=registered.fn if registered else fn,
        args=args,
        kwargs=kwargs,
        policy=retry or step_policy(registered),
        at_most_once=bool(registered and registered.at_most_once),
        registered=registered,
    )


@dataclass(frozen=True)
class Answered:
    """The history's answer to a step call: its recorded result."""

    result: Any


def run_step(cursor: ReplayCursor, call: StepCall, rand: Callable[[], float]) -> Any:
    """Answer `call` from the history, or run its next attempt; returns the step's result."""
    prepared = prepare_step(cursor, call, rand)
    if isinstance(prepared, Answered):
        return prepared.result
    with StepBody(prepared.start()) as body:
        return prepared.finish(body, body.run(cursor.payload_limit))


def begin_step(
    cursor: ReplayCursor, call: StepCall, rand: Callable[[], float]
) -> Answered | tuple[StepAttemptRun, BodyCall]:
    """`prepare_step`, then the attempt's start if it runs now: one call where the caller
    must hop to the run's thread for each (an async workflow's step)."""
    prepared = prepare_step(cursor, call, rand)
    if isinstance(prepared, Answered):
        return prepared
    return prepared, prepared.start()


def prepare_step(
    cursor: ReplayCursor, call: StepCall, rand: Callable[[], float]
) -> Answered | StepAttemptRun:
    """What the history says of `call`: its answer (a recorded failure, a wait or an
    interrupted attempt raises here), or the attempt to run now."""
    recorded = cursor.recorded(call.position)
    action = cursor.identity_checked(
        lambda: history.next_step_action(
            recorded,
            call.name,
            cursor.clock.now(),
            at_most_once=call.at_most_once,
            max_attempts=call.policy.max_attempts,
        )
    )
    if isinstance(action, history.ReturnRecorded):
        return Answered(action.result)
    if isinstance(action, history.RaiseRecorded):
        raise StepFailed.from_record(call.name, call.position, action.error)
    if isinstance(action, history.WaitUntil):
        raise Suspend(action.wake_at)
    step_input, input_bytes = cursor.checked(
        {"args": list(call.args), "kwargs": call.kwargs}, f"step {call.name!r} input"
    )
    if not isinstance(action, history.RunAttempt | history.Interrupted):
        raise TypeError(f"unexpected replay action {action!r} for a step")
    attempt = StepAttemptRun(cursor, call, step_input, rand, action.attempt, input_bytes)
    if isinstance(action, history.Interrupted):
        kind = "at-most-once " if call.at_most_once else ""
        interrupted = StepInterrupted(
            f"attempt {action.attempt} of {kind}step {call.name!r} was interrupted; "
            "it is not run again"
        )
        attempt.failed(interrupted)
    turn = call.registered and turn_wait(call.registered, cursor.run_id, call.position,
                                         action.attempt)  # fmt: skip
    if turn:
        raise Suspend(turn)  # no worker waits for the turn; the attempt keeps it
    attempt.fresh = action.fresh
    return attempt


@dataclass
class StepAttemptRun:
    """One attempt of one inline step: its start, then what its body's outcome records."""

    cursor: ReplayCursor
    call: StepCall
    step_input: Any
    rand: Callable[[], float]
    attempt: int
    input_bytes: int
    fresh: bool = False
    started_at: datetime | None = None
    outbox: StepOutbox | None = None  # the body's chunks, committed with its result

    @functools.cached_property
    def step_id(self) -> uuid.UUID:
        return step_id(self.cursor.run_id, self.call.position)  # a uuid5: derived once

    def row(self, status: str, attempt: int, at: Any, **fields: Any) -> StepRow:
        call = self.call
        sid = self.step_id
        return StepRow(sid, call.position, call.name, "step", status, attempt, at,
                       input=self.step_input, **fields)  # fmt: skip

    def start(self) -> BodyCall:
        """Record the attempt's start; returns the body to run."""
        cursor, call, attempt = self.cursor, self.call, self.attempt
        sid = self.step_id
        started = cursor.clock.now()
        events: list[EventDraft] = []
        if self.fresh:
            events.append(
                step_created(sid, call.position, call.name, "step", self.step_input, started)
            )
        begun = {"attempt": attempt, "worker": worker_id()}
        events.append(EventDraft(EventType.STEP_STARTED, started, sid, begun))
        running = self.row(StepStatus.RUNNING, attempt, started, started_at=started)
        # An at-most-once start must be durable before the body runs; an at-least-once start
        # is queued and usually commits together with the completion.
        cursor.write(events, running, sync=call.at_most_once, payload_bytes=self.input_bytes)
        self.started_at = started
        self.outbox = StepOutbox()
        info = StepInfo(cursor.run_id, call.position, call.name, attempt, self.outbox)
        timeout = call.registered.timeout if call.registered else None
        return BodyCall(info, call.body, call.args, call.kwargs, f"step {call.name!r}", timeout)

    def finish(self, body: StepBody, outcome: BodyOutcome) -> Any:
        """Record how the body ended: the step's result (returned), its final failure (raises
        StepFailed) or its retry (raises Suspend); labels the attempt for metrics and spans."""
        if outcome.error is not None:
            try:
                self.failed(outcome.error)
            except Suspend:
                body.outcome = "retrying"  # a failed attempt suspends until its retry
                raise
        cursor, attempt = self.cursor, self.attempt
        sid = self.step_id
        started = self.started_at
        finished = cursor.clock.now()
        done = self.row(StepStatus.COMPLETED, attempt, started, result=outcome.result,
                        started_at=started, finished_at=finished)  # fmt: skip
        payload = {"attempt": attempt, "result": outcome.result}
        completed = EventDraft(EventType.STEP_COMPLETED, finished, sid, payload)
        size = self.input_bytes + outcome.size
        outbox = self.outbox or StepOutbox()
        # Chunks and their hooks: readers wait on their commit.
        sync = not self.call.ends_run or bool(outbox.chunks or outbox.on_commit)
        cursor.write(
            [completed], done, sync=sync, payload_bytes=size + outbox.size, chunks=outbox.chunks
        )
        outbox.committed()
        body.outcome = "completed"
        return outcome.result

    def failed(self, exc: BaseException) -> NoReturn:
        """Record a failed attempt: the step fails for good (raises StepFailed), or its retry
        is recorded and the run suspends until then (raises Suspend)."""
        cursor, call, attempt = self.cursor, self.call, self.attempt
        sid = self.step_id
        now = cursor.clock.now()
        error = describe_exception(exc)
        decision = decide(call.policy, attempt, exc, self.rand)
        if isinstance(decision, GiveUp):
            row = self.row(StepStatus.FAILED, attempt, now, error=error, finished_at=now)
            payload = {"attempt": attempt, "error": error, "reason": decision.reason}
            cursor.write([EventDraft(EventType.STEP_FAILED, now, sid, payload)], row, sync=True)
            raise StepFailed.from_record(call.name, call.position, error) from exc
        wake_at = now + timedelta(seconds=decision.delay)
        row = self.row(StepStatus.PENDING, attempt, now, error=error, wake_at=wake_at)
        payload = {
            "attempt": attempt,
            "delay": decision.delay,
            "wake_at": wake_at.isoformat(),
            "error": error,
        }
        retrying = EventDraft(EventType.STEP_RETRYING, now, sid, payload)
        cursor.write([retrying], row, sync=False)  # the suspend that follows commits it
        raise Suspend(wake_at)


def sleep(cursor: ReplayCursor, seconds: float, position: int | None = None) -> None:
    """`ctx.sleep`: record a durable timer and suspend until it fires (returns once it has).
    `position` is the one an async workflow took at the call (else the cursor's next)."""
    position = cursor.next_position() if position is None else position
    sleep_input = {"seconds": float(seconds)}
    call = DurableCall(cursor, position, "sleep", StepKind.SLEEP, sleep_input)
    action = history.next_sleep_action(call.recorded, "sleep", call.now)
    if isinstance(action, history.ReturnRecorded):
        return
    if isinstance(action, history.RaiseRecorded):
        raise StepFailed.from_record("sleep", position, action.error)
    if isinstance(action, history.WaitUntil):
        raise Suspend(action.wake_at)
    if isinstance(action, history.TimerFired):
        call.finish(StepStatus.COMPLETED, call.event(EventType.WAIT_COMPLETED, {}))
        return
    wake_at = call.now + timedelta(seconds=float(seconds))
    call.wait(call.event(EventType.WAIT_CREATED, {**sleep_input, "wake_at": wake_at.isoformat()}),
              wake_at)  # fmt: skip
    raise Suspend(wake_at)
