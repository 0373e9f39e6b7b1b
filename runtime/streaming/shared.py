"""Shared looks: readers of one stream in one process share each look at the database.

Twenty browsers following the same run make twenty readers in the web process, woken by the
same signal and all asking for the chunks after the same seq. The first of them looks; the
others, asking the same question (same stream, same seq, same signal generation), wait for
its answer instead of asking the database again.

Reusing another reader's look is safe: that look began after the generation both readers saw
was current, so a chunk it missed committed later, and its notification moves the generation
past what either reader saw; each one's next wait returns at once and it looks again.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")
_KEPT = 1024  # streams remembered at once; an evicted one just looks again


class _Answer(Generic[T]):
    """One look's outcome, awaited by the readers that asked the same question."""

    def __init__(self) -> None:
        self._done = threading.Event()
        self._value: T | None = None
        self._error: BaseException | None = None

    def settle(self, value: T | None, error: BaseException | None) -> None:
        self._value, self._error = value, error
        self._done.set()

    def get(self) -> T:
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]  # set whenever no error is


class SharedLooks(Generic[T]):
    """The latest look per stream, handed to every reader asking the same question."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._latest: OrderedDict[tuple[uuid.UUID, str], tuple[Hashable, _Answer[T]]] = (
            OrderedDict()
        )

    def look(self, run_id: uuid.UUID, stream: str, question: Hashable, ask: Callable[[], T]) -> T:
        """`ask()`'s answer, or the answer of a look at the same question under way or done."""
        key = (run_id, stream)
        with self._lock:
            entry = self._latest.get(key)
            if entry is not None and entry[0] == question:
                self._latest.move_to_end(key)
                answer, mine = entry[1], False
            else:
                answer, mine = _Answer[T](), True
                self._latest[key] = (question, answer)
                if len(self._latest) > _KEPT:
                    self._latest.popitem(last=False)
        if mine:
            try:
                value = ask()
            except BaseException as exc:
                self._forget(key, answer)
                answer.settle(None, exc)
                raise
            answer.settle(value, None)
        return answer.get()

    def _forget(self, key: tuple[uuid.UUID, str], answer: _Answer[T]) -> None:
        # A failed look is not shared with later readers: they ask again.
        with self._lock:
            entry = self._latest.get(key)
            if entry is not None and entry[1] is answer:
                del self._latest[key]
