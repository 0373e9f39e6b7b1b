"""Errors about updates (contract section 2l): refused, undeclared, or not found."""

from __future__ import annotations

from runtime.core.errors.base import FanfoldError


class UpdateRejected(FanfoldError):
    """An update refused: by the workflow's validator (before anything is recorded) or by the
    workflow's `upd.reject(reason)`. A validator may raise it (or ValueError) itself."""

    code = "update_rejected"


class UnknownUpdate(FanfoldError):
    """An update name the run's workflow does not declare in `@workflow(updates=...)`."""

    code = "unknown_update"


class UpdateNotFound(FanfoldError, LookupError):
    """No update with this id was sent to the run."""

    code = "update_not_found"
