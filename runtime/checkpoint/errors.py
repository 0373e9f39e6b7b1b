"""Errors raised to callers of the checkpoint writer."""

from __future__ import annotations


class CheckpointFailed(Exception):
    """A checkpoint was not committed; nothing after it in ``session`` will be written.

    ``__cause__`` is the sink's original exception. The exception pickles (for Celery) with
    its session and message; the cause does not survive pickling.
    """

    code = "checkpoint_failed"

    def __init__(self, session: str, message: str | None = None) -> None:
        self.session = session
        self.message = message or f"checkpoint for session {session!r} was not committed"
        super().__init__(session, self.message)

    def __str__(self) -> str:
        return self.message

    @classmethod
    def caused_by(cls, session: str, cause: BaseException) -> CheckpointFailed:
        """Build a fresh instance chained to ``cause``: one per raise, never shared."""
        exc = cls(session, f"checkpoint for session {session!r} was not committed: {cause!r}")
        exc.__cause__ = cause
        return exc


class WriterClosed(RuntimeError):
    """The checkpoint writer was closed (or its thread died) and accepts no more work."""

    code = "checkpoint_writer_closed"
