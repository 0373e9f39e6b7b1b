"""Seconds spent in step bodies, summed inside a `counted()` block of this thread.

A batch of runs (runtime.worker.run_batch) ends early once its bodies have run long enough:
their own time, so that a worker slowed by a busy machine or by waiting on commits does not
hand runs to workers as busy as itself (the fan-out chunk's rule, runtime.fanout.chunk).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass
class Spent:
    seconds: float = 0.0


_spent: ContextVar[Spent | None] = ContextVar("fanfold_body_seconds", default=None)


def add(seconds: float) -> None:
    """A body ran `seconds`: counted if a `counted()` block is open."""
    spent = _spent.get()
    if spent is not None:
        spent.seconds += seconds


@contextmanager
def counted() -> Iterator[Spent]:
    """The seconds step bodies run inside the block."""
    spent = Spent()
    token = _spent.set(spent)
    try:
        yield spent
    finally:
        _spent.reset(token)
