"""Fanfold's durable workflow runtime.

Workflows are ordinary Python; every step's result is checkpointed and a resumed run replays
its history without running finished steps again. See README.md for a tour.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from runtime.core.current import StepInfo, current_step
from runtime.core.errors import (
    CallbackFailed,
    CallbackTimedOut,
    ConditionTimedOut,
    FanfoldError,
    FatalError,
    IdempotencyConflict,
    NonDeterminismError,
    PayloadError,
    RetryableError,
    RunAlreadyFinished,
    RunCancelled,
    RunFailed,
    RunFinished,
    RunNotFinished,
    RunNotFound,
    StepFailed,
    StepTimedOut,
    UnknownUpdate,
    UpdateNotFound,
    UpdateRejected,
    UpdateValidatorFailed,
    ValueNotFound,
)
from runtime.core.retry import RetryPolicy
from runtime.core.schedule import Cron
from runtime.registry import Signature, step, workflow

if TYPE_CHECKING:  # what the lazy names below are, for type checkers (PEP 562 hides them)
    from runtime.async_context import AsyncDurableContext
    from runtime.context import DurableContext
    from runtime.handles import RunHandle, aget_run, astart, fork, get_run, start
    from runtime.messaging.sending import emit_signal, send
    from runtime.streaming.writer import Stream, stream

_LAZY = {
    "start": "runtime.handles",
    "astart": "runtime.handles",
    "get_run": "runtime.handles",
    "aget_run": "runtime.handles",
    "fork": "runtime.handles",
    "list_runs": "runtime.run_queries",
    "RunHandle": "runtime.handles",
    "DurableContext": "runtime.context",
    "AsyncDurableContext": "runtime.async_context",
    "stream": "runtime.streaming.writer",
    "send": "runtime.messaging.sending",
    "emit_signal": "runtime.messaging.sending",
    "Stream": "runtime.streaming.writer",
    "get_update": "runtime.updates.calling",
    "start_with_update": "runtime.update_starts",
    "astart_with_update": "runtime.update_starts",
    "Update": "runtime.durable.updates",
}


def __getattr__(name: str) -> Any:
    # Names that need Django's app registry load on first use, so that importing `runtime`
    # (e.g. from settings or a workflows module) never touches the database layer early.
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'runtime' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "AsyncDurableContext",
    "CallbackFailed",
    "CallbackTimedOut",
    "ConditionTimedOut",
    "Cron",
    "DurableContext",
    "FanfoldError",
    "FatalError",
    "IdempotencyConflict",
    "NonDeterminismError",
    "PayloadError",
    "RetryPolicy",
    "RetryableError",
    "RunAlreadyFinished",
    "RunCancelled",
    "RunFailed",
    "RunFinished",
    "RunHandle",
    "RunNotFinished",
    "RunNotFound",
    "Signature",
    "StepFailed",
    "StepInfo",
    "StepTimedOut",
    "Stream",
    "UnknownUpdate",
    "Update",
    "UpdateNotFound",
    "UpdateRejected",
    "UpdateValidatorFailed",
    "ValueNotFound",
    "aget_run",
    "astart",
    "astart_with_update",
    "current_step",
    "emit_signal",
    "fork",
    "get_run",
    "get_update",
    "list_runs",
    "send",
    "start",
    "start_with_update",
    "step",
    "stream",
    "workflow",
]
