"""Errors of steps and workflow code: raised by step bodies, and raised into workflow code.

`describe_exception` is the JSON record of any exception as step and run errors store it.
"""

from __future__ import annotations

import traceback
from typing import Any

from runtime.core.errors.base import FanfoldError


class FatalError(FanfoldError):
    """Raised by step code to fail the step at once, without any retry."""

    code = "fatal"


class RetryableError(FanfoldError):
    """Raised by step code to ask for a retry, optionally after a given delay (seconds)."""

    code = "retryable"

    def __init__(self, message: str = "", retry_after: float | Any | None = None) -> None:
        super().__init__(message)
        if retry_after is not None and hasattr(retry_after, "total_seconds"):
            retry_after = retry_after.total_seconds()
        if retry_after is not None and (
            not isinstance(retry_after, int | float) or retry_after < 0
        ):
            raise ValueError("retry_after must be a non-negative number of seconds or a timedelta")
        self.retry_after: float | None = None if retry_after is None else float(retry_after)

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.__class__, (self.message, self.retry_after))


class NonDeterminismError(FanfoldError):
    """Replay met a different step than the one recorded at that position.

    `position` is where (when known); `differs` says what: "name" or "kind".
    """

    code = "non_determinism"

    def __init__(
        self, message: str = "", position: int | None = None, differs: str = "name"
    ) -> None:
        super().__init__(message)
        self.position = position
        self.differs = differs

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.__class__, (self.message, self.position, self.differs))


class StepTimedOut(FanfoldError):
    """An async step body ran past its `timeout` (`@step(timeout=...)`) and was cancelled;
    the attempt fails with this and is retried by the step's policy.

    Not a `TimeoutError` on purpose: a caller waiting on the body's future with a timeout of
    its own gets `TimeoutError` for *its* wait, and the two must not be confused.
    """

    code = "step_timed_out"

    def __init__(self, message: str = "", label: str = "", seconds: float = 0.0) -> None:
        super().__init__(message or f"{label or 'body'} did not finish within {seconds:g} s")
        self.label = label
        self.seconds = seconds

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.__class__, (self.message, self.label, self.seconds))


class NotAwaited(FanfoldError):
    """An async workflow ended without awaiting a context call it made."""

    code = "not_awaited"


class StepFailed(FanfoldError):
    """A step failed for good. Carries the recorded error of its last attempt."""

    code = "step_failed"

    def __init__(
        self,
        message: str = "",
        step: str = "",
        error_type: str = "",
        error_message: str = "",
        position: int | None = None,
    ) -> None:
        super().__init__(message or f"step {step!r} failed: {error_type}: {error_message}")
        self.step = step
        self.error_type = error_type
        self.error_message = error_message
        self.position = position

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            self.__class__,
            (self.message, self.step, self.error_type, self.error_message, self.position),
        )

    @classmethod
    def from_record(cls, step: str, position: int, error: dict[str, Any] | None) -> StepFailed:
        error = error or {}
        return cls(
            step=step,
            error_type=str(error.get("type", "Error")),
            error_message=str(error.get("message", "")),
            position=position,
        )


class StepChanged(FanfoldError):
    """A write conditional on a step's state found the step finished or its deadline moved."""

    code = "step_changed"


class StepInterrupted(FanfoldError):
    """An attempt began and never reported (its worker died). At-most-once steps never run
    such an attempt again; any step whose interrupted attempt was its last fails with this."""

    code = "step_interrupted"


class WorkerLost(FanfoldError):
    """An attempt's worker was lost (killed, or its lease expired) before the attempt reported:
    never raised, the record of such an attempt (a Django task's `errors` list it)."""

    code = "worker_lost"


class ChildFailed(FanfoldError):
    """A child-workflow branch's run failed or was cancelled."""

    code = "child_failed"


class ConditionTimedOut(FanfoldError):
    """`ctx.wait_for_condition` polled until its `timeout` and the condition never held."""

    code = "condition_timed_out"


def describe_exception(exc: BaseException) -> dict[str, Any]:
    """The JSON record of an exception as stored in step and run errors."""
    record: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)}
    if isinstance(exc, StepFailed):
        record.update(step=exc.step, cause_type=exc.error_type, cause_message=exc.error_message)
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    record["traceback"] = tb[-8000:]
    return record
