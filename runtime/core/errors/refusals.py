"""Refusals of what a caller asked: payloads, unknown names, arguments, forks and retries,
idempotency keys and permissions. The API answers each of them with a 4xx.
"""

from __future__ import annotations

from runtime.core.errors.base import FanfoldError


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


class PositionOutOfRange(FanfoldError, ValueError):
    """A fork position that is not a position of the source run's history (or one past it)."""

    code = "position_out_of_range"


class PositionUnfinished(FanfoldError):
    """A fork position after a step of the source run that has not finished yet."""

    code = "position_unfinished"


class NothingToRetry(FanfoldError):
    """A retry of a run that has no failed or cancelled step."""

    code = "nothing_to_retry"


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
