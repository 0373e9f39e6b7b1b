"""One instance per process, rebuilt after fork (Celery prefork children)."""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class ProcessLocal(Generic[T]):
    """Lazily builds one ``T`` per process with ``factory``.

    A forked child never sees the parent's instance: ``get()`` compares ``os.getpid()``
    and a fork hook drops the inherited instance, so each prefork child builds its own
    checkpoint writer (and its own writer thread, which fork does not copy).
    """

    def __init__(self, factory: Callable[[], T]) -> None:
        self._factory = factory
        self._lock = threading.Lock()
        self._slot: tuple[int, T] | None = None
        _instances.add(self)

    def get(self) -> T:
        """Return this process's instance, building it on first use."""
        pid = os.getpid()
        slot = self._slot
        if slot is not None and slot[0] == pid:
            return slot[1]
        with self._lock:
            slot = self._slot
            if slot is None or slot[0] != pid:
                slot = (pid, self._factory())
                self._slot = slot
            return slot[1]

    def built(self) -> bool:
        """Whether this process has built its instance yet."""
        slot = self._slot
        return slot is not None and slot[0] == os.getpid()

    def _forget_after_fork(self) -> None:
        # The parent may have held the lock at fork time; the child gets a fresh one.
        self._lock = threading.Lock()
        self._slot = None


_instances: weakref.WeakSet[ProcessLocal[Any]] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for instance in list(_instances):
        instance._forget_after_fork()


os.register_at_fork(after_in_child=_after_fork_in_child)
