"""Errors of the worker's event loop, each with a stable `code`, picklable across Celery."""

from __future__ import annotations

from runtime.core.errors import FanfoldError


class InsideEventLoop(FanfoldError, RuntimeError):
    """`run_to_completion` was called from a thread that is running an event loop: blocking
    there would stop the loop (and, on the worker loop, wait for itself forever)."""

    code = "inside_event_loop"


class WorkerLoopClosed(FanfoldError, RuntimeError):
    """The worker loop of this process was closed (worker shutdown) and takes no more bodies."""

    code = "worker_loop_closed"
