"""Replay: what a workflow call at a given position does, given what the history recorded.

This is the deterministic heart of the runtime. The context asks `next_action` at every
durable call; the answer depends only on the recorded step (if any), the call's identity and
the current time, so replay after a crash or a suspension takes the same path as the first run.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from runtime.core.errors import NonDeterminismError
from runtime.core.states import StepStatus
from runtime.core.writes import StepRow


@dataclass(frozen=True, slots=True)
class RecordedStep:
    """What the history says about one position of a run."""

    position: int
    name: str
    kind: str
    status: str
    attempt: int = 0
    result: Any = None
    error: dict[str, Any] | None = None
    wake_at: datetime | None = None
    started_at: datetime | None = None
    callback_token: str | None = None

    @classmethod
    def of(cls, row: StepRow) -> RecordedStep:
        """The local view of a step row just written, so replay state follows our writes."""
        return cls(
            row.position,
            row.name,
            row.kind,
            row.status,
            row.attempt,
            row.result,
            row.error,
            row.wake_at,
            row.started_at,
            row.callback_token,
        )


@dataclass(frozen=True, slots=True)
class ReturnRecorded:
    """The step finished before: hand back its recorded result."""

    result: Any


@dataclass(frozen=True, slots=True)
class RaiseRecorded:
    """The step failed for good before: re-raise its recorded failure."""

    error: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class RunAttempt:
    """Run the step body as attempt number `attempt`; `fresh` means nothing is recorded yet."""

    attempt: int
    fresh: bool


@dataclass(frozen=True, slots=True)
class WaitUntil:
    """The position is waiting on a timer (retry delay or sleep) that has not fired yet."""

    wake_at: datetime


@dataclass(frozen=True, slots=True)
class Interrupted:
    """An attempt started and never reported; at-most-once steps count it as failed."""

    attempt: int


@dataclass(frozen=True, slots=True)
class TimerFired:
    """A sleep whose time has come: complete it and go on."""


StepAction = ReturnRecorded | RaiseRecorded | RunAttempt | WaitUntil | Interrupted | TimerFired


def check_identity(recorded: RecordedStep, name: str, kind: str) -> None:
    """Raise NonDeterminismError if replay meets another step than the one recorded."""
    if recorded.name != name or recorded.kind != kind:
        raise NonDeterminismError(
            f"replay reached position {recorded.position} with {kind} {name!r}, "
            f"but the history recorded {recorded.kind} {recorded.name!r} there; "
            "the workflow code changed or is not deterministic",
            position=recorded.position,
            differs="kind" if recorded.kind != kind else "name",
        )


def next_step_action(
    recorded: RecordedStep | None,
    name: str,
    now: datetime,
    *,
    at_most_once: bool,
    max_attempts: int | None = None,
) -> StepAction:
    """What `ctx.step` does at a position, given the recorded step there (if any).

    An attempt that began and never reported counts against `max_attempts`, so a step that
    kills its worker every time ends up failed instead of crashing workers forever.
    """
    if recorded is None:
        return RunAttempt(attempt=1, fresh=True)
    check_identity(recorded, name, "step")
    if recorded.status == StepStatus.COMPLETED:
        return ReturnRecorded(recorded.result)
    if recorded.status in (StepStatus.FAILED, StepStatus.CANCELLED):
        return RaiseRecorded(recorded.error)
    if recorded.status == StepStatus.PENDING:
        if recorded.wake_at is not None and recorded.wake_at > now:
            return WaitUntil(recorded.wake_at)
        return RunAttempt(attempt=recorded.attempt + 1, fresh=recorded.attempt == 0)
    # RUNNING: an attempt began and never reported (the worker died or lost its lease).
    if at_most_once or (max_attempts is not None and recorded.attempt >= max_attempts):
        return Interrupted(recorded.attempt)
    return RunAttempt(attempt=recorded.attempt + 1, fresh=False)


def next_sleep_action(recorded: RecordedStep | None, name: str, now: datetime) -> StepAction:
    """What `ctx.sleep` does at a position."""
    if recorded is None:
        return RunAttempt(attempt=1, fresh=True)
    check_identity(recorded, name, "sleep")
    if recorded.status == StepStatus.COMPLETED:
        return ReturnRecorded(None)
    if recorded.status in (StepStatus.FAILED, StepStatus.CANCELLED):
        return RaiseRecorded(recorded.error)
    if recorded.wake_at is not None and recorded.wake_at > now:
        return WaitUntil(recorded.wake_at)
    return TimerFired()
