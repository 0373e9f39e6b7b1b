"""Errors of the worker's event loop, each with a stable `code`, picklable across Celery."""

from __future__ import annotations

from runtime.core.errors import FanfoldError


class WorkerLoopClosed(FanfoldError, RuntimeError):
    """The worker loop of this process was closed (worker shutdown) and takes no more bodies."""

    code = "worker_loop_closed"
