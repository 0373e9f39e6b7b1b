"""What is running here: the step whose body runs (`current_step()`), the async workflow whose
code runs, and the workflow that sends durably from its code.

Low in the house (pure context variables) so that every layer may ask, the streams and the
messaging calls included, without importing the workflow side (runtime.durable).
"""

from __future__ import annotations

import contextvars
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from runtime.core.writes import ChunkDraft

if TYPE_CHECKING:  # the core imports nothing above it at run time
    from runtime.async_context import AsyncDurableContext

T = TypeVar("T")


@dataclass
class StepOutbox:
    """What an inline step's body leaves to be committed with the step's result: stream
    chunks (runtime.streaming), and what to call once they are committed."""

    chunks: list[ChunkDraft] = field(default_factory=list)
    size: int = 0  # the chunks' JSON bytes, as measured when they were added
    on_commit: list[Callable[[], None]] = field(default_factory=list)

    def add(self, chunk: ChunkDraft, size: int) -> None:
        self.chunks.append(chunk)
        self.size += size

    def committed(self) -> None:
        """The step's result and the chunks are committed."""
        for hook in self.on_commit:
            hook()


@dataclass(frozen=True)
class StepInfo:
    run_id: uuid.UUID
    position: int
    name: str
    attempt: int
    # An inline step's (a workflow's ctx.step) outbox; None for fan-out branches and polls.
    outbox: StepOutbox | None = field(default=None, compare=False, repr=False)


_current: contextvars.ContextVar[StepInfo | None] = contextvars.ContextVar(
    "fanfold_current_step", default=None
)


def current_step() -> StepInfo:
    """The step whose body is running in this thread; raises LookupError outside a step."""
    info = _current.get()
    if info is None:
        raise LookupError("current_step() is only available inside a step body")
    return info


def active_step() -> StepInfo | None:
    """The step whose body is running in this thread, or None."""
    return _current.get()


class _Bound(AbstractContextManager[None]):
    """A plain context manager rather than a generator's: a step body runs inside one."""

    __slots__ = ("_token", "_value", "_var")

    def __init__(self, var: contextvars.ContextVar[Any], value: Any) -> None:
        self._var, self._value = var, value
        self._token: contextvars.Token[Any] | None = None

    def __enter__(self) -> None:
        self._token = self._var.set(self._value)

    def __exit__(self, *exc_info: object) -> None:
        if self._token is not None:
            self._var.reset(self._token)


def bound(var: contextvars.ContextVar[T | None], value: T) -> AbstractContextManager[None]:
    """`var` set to `value` for the block, then back to what it was."""
    return _Bound(var, value)


def running(info: StepInfo) -> AbstractContextManager[None]:
    return bound(_current, info)


_workflow: contextvars.ContextVar[AsyncDurableContext | None] = contextvars.ContextVar(
    "fanfold_current_workflow", default=None
)


def active_workflow() -> AsyncDurableContext | None:
    """The `ctx` of the async workflow whose code is running in this task (an async view of a
    sync workflow's, in `run_async_from_sync`), or None: integrations such as runtime.agents
    reach the run through it."""
    return _workflow.get()


def in_workflow(ctx: AsyncDurableContext) -> AbstractContextManager[None]:
    return bound(_workflow, ctx)


class WorkflowSender(Protocol):
    """What `runtime.send` and `runtime.emit_signal` need of the workflow whose code calls them."""

    def send_durably(
        self, run_id: uuid.UUID | str, topic: str, value: Any, idempotency_key: str | None
    ) -> int: ...

    def emit_durably(self, name: str, payload: Any, idempotency_key: str | None) -> int: ...


_sender: contextvars.ContextVar[WorkflowSender | None] = contextvars.ContextVar(
    "fanfold_workflow_sender", default=None
)


def workflow_sender(ctx: WorkflowSender) -> AbstractContextManager[None]:
    """Mark the code running in this context as the workflow code of `ctx` (runtime.context)."""
    return bound(_sender, ctx)


def current_sender() -> WorkflowSender | None:
    """The workflow whose code is running here, if any."""
    return _sender.get()
