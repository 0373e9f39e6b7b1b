"""Typed errors of the runtime, each with a stable `code`, picklable across Celery.

One base class (`base.FanfoldError`) and the errors by what they are about: `steps` (raised by
step bodies or into workflow code, and `describe_exception`, the stored record of any error),
`runs`, `callbacks` and `refusals` (a caller's request refused: the API's 4xx). Import them
from here: `from runtime.core.errors import StepFailed`.
"""

from __future__ import annotations

from runtime.core.errors.base import FanfoldError
from runtime.core.errors.callbacks import (
    CallbackAlreadyCompleted,
    CallbackFailed,
    CallbackNotFound,
    CallbackTimedOut,
)
from runtime.core.errors.refusals import (
    IdempotencyConflict,
    InvalidArguments,
    NothingToRetry,
    NotPermitted,
    PayloadError,
    PayloadTooLarge,
    PositionOutOfRange,
    PositionUnfinished,
    RegistrationError,
    ReservedIdempotencyKey,
    ScheduleNotFound,
    WorkflowNotFound,
)
from runtime.core.errors.runs import (
    LeaseLost,
    RunAlreadyFinished,
    RunCancelled,
    RunFailed,
    RunFinished,
    RunNotFinished,
    RunNotFound,
    StreamNotFound,
    ValueNotFound,
)
from runtime.core.errors.steps import (
    ChildFailed,
    ConditionTimedOut,
    FatalError,
    NonDeterminismError,
    NotAwaited,
    RetryableError,
    StepChanged,
    StepFailed,
    StepInterrupted,
    StepTimedOut,
    WorkerLost,
    describe_exception,
)
from runtime.core.errors.updates import (
    UnknownUpdate,
    UpdateNotFound,
    UpdateRejected,
    UpdateValidatorFailed,
)

__all__ = [
    "CallbackAlreadyCompleted",
    "CallbackFailed",
    "CallbackNotFound",
    "CallbackTimedOut",
    "ChildFailed",
    "ConditionTimedOut",
    "FanfoldError",
    "FatalError",
    "IdempotencyConflict",
    "InvalidArguments",
    "LeaseLost",
    "NonDeterminismError",
    "NotAwaited",
    "NotPermitted",
    "NothingToRetry",
    "PayloadError",
    "PayloadTooLarge",
    "PositionOutOfRange",
    "PositionUnfinished",
    "RegistrationError",
    "ReservedIdempotencyKey",
    "RetryableError",
    "RunAlreadyFinished",
    "RunCancelled",
    "RunFailed",
    "RunFinished",
    "RunNotFinished",
    "RunNotFound",
    "ScheduleNotFound",
    "StepChanged",
    "StepFailed",
    "StepInterrupted",
    "StepTimedOut",
    "StreamNotFound",
    "UnknownUpdate",
    "UpdateNotFound",
    "UpdateRejected",
    "UpdateValidatorFailed",
    "ValueNotFound",
    "WorkerLost",
    "WorkflowNotFound",
    "describe_exception",
]

# Their path stays `runtime.core.errors.<Name>`, as recorded histories, task results and API
# errors name it, whichever module of the package defines them.
for _name in __all__:
    _value = globals()[_name]
    if isinstance(_value, type):
        _value.__module__ = __name__
