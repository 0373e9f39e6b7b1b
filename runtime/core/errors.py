"""Typed errors of the runtime, each with a stable `code`, picklable across Celery."""

from __future__ import annotations

import traceback
from typing import Any


class FanfoldError(Exception):
    """Base class of every error Fanfold raises on purpose."""

    code = "fanfold_error"

    def __init__(self, message: str = "") -> None:
        super().__init__(message)
        self.message = message

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.__class__, (self.message,))

    def __str__(self) -> str:
        return self.message


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


class PayloadError(FanfoldError):
    """A value that must be recorded is not JSON, or is larger than the configured limit."""

    code = "invalid_payload"


class PayloadTooLarge(PayloadError):
    code = "payload_too_large"


class WorkflowNotFound(FanfoldError):
    code = "unknown_workflow"


class InvalidArguments(FanfoldError):
    """Arguments that do not fit the workflow's parameters."""

    code = "invalid_arguments"


class RegistrationError(FanfoldError):
    code = "registration_error"


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


class RunFailed(FanfoldError):
    """`RunHandle.wait()` found the run failed; `.error` is the recorded error."""

    code = "run_failed"

    def __init__(self, message: str = "", error: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.error = error or {}

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.__class__, (self.message, self.error))


class RunCancelled(FanfoldError):
    code = "run_cancelled"


class RunAlreadyFinished(FanfoldError):
    """Cancel (or a callback) arrived for a run that has already finished."""

    code = "run_finished"


class RunFinished(RunAlreadyFinished):
    """A message was sent to a run that has finished (completed, failed or cancelled)."""

    code = "run_finished"


class ValueNotFound(FanfoldError, LookupError):
    """The run has set no value under this key (yet)."""

    code = "value_not_found"


class StepChanged(FanfoldError):
    """A write conditional on a step's state found the step finished or its deadline moved."""

    code = "step_changed"


class LeaseLost(FanfoldError):
    """This executor no longer owns the run (cancelled, or taken over after a lost heartbeat)."""

    code = "lease_lost"


class WokenUp(LeaseLost):
    """A suspend lost the race with a wake-up: the executor must replay instead of sleeping."""

    code = "woken_up"


class RunNotFound(FanfoldError, LookupError):
    code = "not_found"


class StepInterrupted(FanfoldError):
    """An attempt began and never reported (its worker died). At-most-once steps never run
    such an attempt again; any step whose interrupted attempt was its last fails with this."""

    code = "step_interrupted"


class ChildFailed(FanfoldError):
    """A child-workflow branch's run failed or was cancelled."""

    code = "child_failed"


class CallbackFailed(FanfoldError):
    """`Callback.wait()` found an error posted to the callback."""

    code = "callback_failed"

    def __init__(
        self, message: str = "", callback: str = "", error_type: str = "", error_message: str = ""
    ) -> None:
        super().__init__(message or f"callback {callback!r} failed: {error_type}: {error_message}")
        self.callback = callback
        self.error_type = error_type
        self.error_message = error_message

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            self.__class__,
            (self.message, self.callback, self.error_type, self.error_message),
        )


class CallbackTimedOut(FanfoldError):
    """`Callback.wait()` passed its `timeout`, or its `heartbeat_timeout` with no heartbeat."""

    code = "callback_timed_out"


class ConditionTimedOut(FanfoldError):
    """`ctx.wait_for_condition` polled until its `timeout` and the condition never held."""

    code = "condition_timed_out"


class CallbackNotFound(FanfoldError, LookupError):
    code = "callback_not_found"


class CallbackAlreadyCompleted(FanfoldError):
    """A result, error or heartbeat arrived for a callback that already has its outcome."""

    code = "callback_completed"


class PositionOutOfRange(FanfoldError, ValueError):
    """A fork position that is not a position of the source run's history (or one past it)."""

    code = "position_out_of_range"


class PositionUnfinished(FanfoldError):
    """A fork position after a step of the source run that has not finished yet."""

    code = "position_unfinished"


class NothingToRetry(FanfoldError):
    """A retry of a run that has no failed or cancelled step."""

    code = "nothing_to_retry"


def describe_exception(exc: BaseException) -> dict[str, Any]:
    """The JSON record of an exception as stored in step and run errors."""
    record: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)}
    if isinstance(exc, StepFailed):
        record.update(step=exc.step, cause_type=exc.error_type, cause_message=exc.error_message)
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    record["traceback"] = tb[-8000:]
    return record


class ScheduleNotFound(FanfoldError, LookupError):
    """No workflow with a schedule has this name."""

    code = "schedule_not_found"


class IdempotencyConflict(FanfoldError):
    """A start repeats an idempotency key of the same owner and workflow with other arguments."""

    code = "idempotency_conflict"


class ReservedIdempotencyKey(FanfoldError, ValueError):
    """A caller's idempotency key in the namespace of the keys the runtime makes itself."""

    code = "reserved_idempotency_key"


class NotPermitted(FanfoldError, PermissionError):
    """The acting user may see the run or schedule but lacks the permission for this action."""

    code = "permission_denied"
