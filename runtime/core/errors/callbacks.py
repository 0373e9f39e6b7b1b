"""Errors of callbacks: what `Callback.wait()` raises, and posts the callback cannot take."""

from __future__ import annotations

from typing import Any

from runtime.core.errors.base import FanfoldError


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


class CallbackNotFound(FanfoldError, LookupError):
    code = "callback_not_found"


class CallbackAlreadyCompleted(FanfoldError):
    """A result, error or heartbeat arrived for a callback that already has its outcome."""

    code = "callback_completed"
