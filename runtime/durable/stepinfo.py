"""`current_step()`: who am I, for code running inside a step body."""

from __future__ import annotations

import contextvars
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from runtime.core.writes import ChunkDraft


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


@contextmanager
def running(info: StepInfo) -> Iterator[None]:
    token = _current.set(info)
    try:
        yield
    finally:
        _current.reset(token)


_workflow: contextvars.ContextVar[object | None] = contextvars.ContextVar(
    "fanfold_current_workflow", default=None
)


def active_workflow() -> object | None:
    """The `ctx` of the async workflow whose code is running in this task, or None (integrations
    such as runtime.agents reach the run through it)."""
    return _workflow.get()


@contextmanager
def in_workflow(ctx: object) -> Iterator[None]:
    token = _workflow.set(ctx)
    try:
        yield
    finally:
        _workflow.reset(token)
