"""The checkpoint store's database connections.

`SinkConnection` is the sink's own connection, usable from whichever thread writes. Django
keeps one connection per thread. The checkpoint writer hands batches to the sink from its own
thread or, when the sink is free, from a workflow thread blocked on its checkpoint
(runtime.checkpoint.intake). The sink cannot use that thread's connection: it would write
inside whatever transaction the workflow code has open, and prepare its statements on every
thread's connection. Instead it lends one connection of its own to the writing thread, as its
default connection for the length of a batch, the way Django's live-server tests share a
connection with their server thread. The writer lets only one thread write at a time.

`raw_connection()` is the psycopg connection under Django's, ready for prepared statements.
Django turns psycopg's statement preparing off (`prepare_threshold=None`, for poolers that
cannot keep prepared statements), and psycopg then ignores even an explicit
`execute(..., prepare=True)`. The checkpoint and fan-out statements are a few fixed shapes
run thousands of times, and parsing and planning them took about two thirds of a step's
server time. So this connection's threshold is raised to "never automatically": Django's
own queries stay unprepared, and ours are prepared because they ask. Behind PgBouncer this
needs its `max_prepared_statements` (1.21 and later) in transaction pooling mode.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.backends.base.base import BaseDatabaseWrapper

NEVER_AUTOMATICALLY = 2**31 - 1


def raw_connection() -> psycopg.Connection:
    connection.ensure_connection()
    raw = connection.connection
    if raw.prepare_threshold is None:
        raw.prepare_threshold = NEVER_AUTOMATICALLY
    return raw


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
