"""What a finished run came to, as a handle gives it: its result, or the error it raises."""

from __future__ import annotations

from typing import Any

from runtime.core.errors import RunCancelled, RunFailed, RunNotFinished
from runtime.models import Run, RunStatus


def outcome(run: Run) -> Any:
    """A finished run's result; RunFailed or RunCancelled for a run that did not complete."""
    if run.status == RunStatus.COMPLETED:
        return run.result
    if run.status == RunStatus.FAILED:
        error = run.error or {}
        kind, message = error.get("type", "Error"), error.get("message", "")
        raise RunFailed(f"run {run.id} failed: {kind}: {message}", error)
    raise RunCancelled(f"run {run.id} was cancelled")


def finished(run: Run, attribute: str) -> Run:
    """`run` if it has finished; else RunNotFinished, naming `wait()` for `.attribute`."""
    if not run.is_finished:
        raise RunNotFinished(
            f"run {run.id} is still {run.status}: .{attribute} is there once it has "
            f"finished; call .wait(timeout=...) to wait for it"
        )
    return run
