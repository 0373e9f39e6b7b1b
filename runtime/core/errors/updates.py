"""Errors about updates (contract section 2l): refused, undeclared, or not found."""

from __future__ import annotations

from typing import Any

from runtime.core.errors.base import FanfoldError


class UpdateRejected(FanfoldError):
    """An update refused: by the workflow's validator (before anything is recorded) or by the
    workflow's `upd.reject(reason)`. A validator may raise it (or ValueError) itself."""

    code = "update_rejected"


class UpdateValidatorFailed(UpdateRejected):
    """An update's validator raised something other than a refusal (a bug in the validator, or
    a payload it did not expect): the update is refused all the same and nothing is recorded.
    `error_type` and `error_message` say what the validator raised (422 over REST)."""

    code = "update_validator_failed"

    def __init__(
        self, message: str = "", update: str = "", error_type: str = "", error_message: str = ""
    ) -> None:
        super().__init__(
            message or f"the validator of update {update!r} failed: {error_type}: {error_message}"
        )
        self.update = update
        self.error_type = error_type
        self.error_message = error_message

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.__class__, (self.message, self.update, self.error_type, self.error_message))


class UnknownUpdate(FanfoldError):
    """An update name the run's workflow does not declare in `@workflow(updates=...)`."""

    code = "unknown_update"


class UpdateNotFound(FanfoldError, LookupError):
    """No update with this id was sent to the run."""

    code = "update_not_found"
