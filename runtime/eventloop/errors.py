"""Errors of the worker's event loop, each with a stable `code`, picklable across Celery."""

from __future__ import annotations

from typing import Any

from runtime.core.errors import FanfoldError


class BodyTimedOut(FanfoldError):
    """An async body ran past its `timeout` and was cancelled; the attempt fails with this.

    Not a `TimeoutError` on purpose: a caller waiting on the body's future with a timeout of
    its own gets `TimeoutError` for *its* wait, and the two must not be confused.
    """

    code = "body_timed_out"

    def __init__(self, message: str = "", label: str = "", seconds: float = 0.0) -> None:
        super().__init__(message or f"{label or 'body'} did not finish within {seconds:g} s")
        self.label = label
        self.seconds = seconds

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.__class__, (self.message, self.label, self.seconds))


class InsideEventLoop(FanfoldError, RuntimeError):
    """`run_to_completion` was called from a thread that is running an event loop: blocking
    there would stop the loop (and, on the worker loop, wait for itself forever)."""

    code = "inside_event_loop"


class WorkerLoopClosed(FanfoldError, RuntimeError):
    """The worker loop of this process was closed (worker shutdown) and takes no more bodies."""

    code = "worker_loop_closed"
