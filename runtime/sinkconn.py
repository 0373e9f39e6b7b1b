"""The checkpoint sink's own database connection, usable from whichever thread writes.

Django keeps one connection per thread. The checkpoint writer hands batches to the sink from
its own thread or, when the sink is free, from a workflow thread blocked on its checkpoint
(runtime.checkpoint.intake). The sink cannot use that thread's connection: it would write
inside whatever transaction the workflow code has open, and prepare its statements on every
thread's connection. Instead it lends one connection of its own to the writing thread, as its
default connection for the length of a batch, the way Django's live-server tests share a
connection with their server thread. The writer lets only one thread write at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper


class SinkConnection:
    """One lazily opened connection, lent to the writing thread for one batch at a time."""

    def __init__(self, alias: str = DEFAULT_DB_ALIAS) -> None:
        self._alias = alias
        self._wrapper: BaseDatabaseWrapper | None = None

    @contextmanager
    def lent(self) -> Iterator[None]:
        """Make this connection the current thread's `alias` connection until the block ends."""
        wrapper = self._wrapper
        if wrapper is None:
            wrapper = self._wrapper = connections.create_connection(self._alias)
            wrapper.inc_thread_sharing()
        own = connections[self._alias]
        try:
            connections[self._alias] = wrapper
            yield
        finally:
            connections[self._alias] = own

    def close(self) -> None:
        if self._wrapper is not None:
            self._wrapper.close()
