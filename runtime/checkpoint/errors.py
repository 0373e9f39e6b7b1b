"""Errors raised to callers of the checkpoint writer."""

from __future__ import annotations

from typing import Any

from runtime.core.errors import FanfoldError


class CheckpointFailed(FanfoldError):
    """A checkpoint was not committed; nothing after it in ``session`` will be written.

    ``__cause__`` is the sink's original exception. The exception pickles (for Celery) with
    its session and message; the cause does not survive pickling.
    """

    code = "checkpoint_failed"

    def __init__(self, session: str, message: str | None = None) -> None:
        super().__init__(message or f"checkpoint for session {session!r} was not committed")
        self.session = session

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.__class__, (self.session, self.message))

    @classmethod
    def caused_by(cls, session: str, cause: BaseException) -> CheckpointFailed:
        """Build a fresh instance chained to ``cause``: one per raise, never shared."""
        exc = cls(session, f"checkpoint for session {session!r} was not committed: {cause!r}")
        exc.__cause__ = cause
        return exc


class OutcomeUnknown(FanfoldError):
    """A sink could not tell whether its transaction committed (the connection broke during
    COMMIT). The writer must not write any part of that batch again: replay settles it."""

    code = "checkpoint_outcome_unknown"


class WriterClosed(FanfoldError, RuntimeError):
    """The checkpoint writer was closed (or its thread died) and accepts no more work."""

    code = "checkpoint_writer_closed"
