"""Errors about runs: a run waited on that failed or was cancelled, one not found or already
finished, a value not set, and an executor that lost its run.
"""

from __future__ import annotations

from typing import Any

from runtime.core.errors.base import FanfoldError


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


class RunNotFinished(FanfoldError):
    """`RunHandle.result` or `.error` was read before the run finished (`wait()` waits)."""

    code = "run_not_finished"


class RunAlreadyFinished(FanfoldError):
    """Cancel (or a callback) arrived for a run that has already finished."""

    code = "run_finished"


class RunFinished(RunAlreadyFinished):
    """A message was sent to a run that has finished (completed, failed or cancelled)."""

    code = "run_finished"


class RunNotFound(FanfoldError, LookupError):
    code = "not_found"


class ValueNotFound(FanfoldError, LookupError):
    """The run has set no value under this key (yet)."""

    code = "value_not_found"


class StreamNotFound(FanfoldError, LookupError):
    """The run has finished without writing to this stream (told apart from one read to its end)."""

    code = "stream_not_found"


class LeaseLost(FanfoldError):
    """This executor no longer owns the run (cancelled, or taken over after a lost heartbeat)."""

    code = "lease_lost"
