"""Control flow that unwinds workflow code: a suspend, or an abort after a failed checkpoint.

Both derive from BaseException so that `except Exception` in user code cannot swallow them.
"""

from __future__ import annotations

from datetime import datetime


class Suspend(BaseException):
    """Unwinds the workflow to park the run until `wake_at` (None: until something wakes it)."""

    def __init__(self, wake_at: datetime | None) -> None:
        super().__init__(wake_at)
        self.wake_at = wake_at


class Abort(BaseException):
    """Unwinds workflow code when a checkpoint failed; `failure` is the CheckpointFailed."""

    def __init__(self, failure: Exception) -> None:
        super().__init__(str(failure))
        self.failure = failure
