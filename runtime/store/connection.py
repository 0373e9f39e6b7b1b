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
own queries stay unprepared, and ours are prepared because they ask. Behind a pooler in
transaction mode (FANFOLD_DATABASE_POOLED) nothing is prepared: the next transaction may run
on a server connection that never saw the statement (PgBouncer before 1.21 cannot follow
them), so the threshold stays off and psycopg ignores the asking.
"""

from __future__ import annotations

import functools
import os
import select
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import psycopg
from django.db import (
    DEFAULT_DB_ALIAS,
    InterfaceError,
    OperationalError,
    close_old_connections,
    connection,
    connections,
)
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created

from runtime.store.direct import pooled

T = TypeVar("T")

NEVER_AUTOMATICALLY = 2**31 - 1


def raw_connection() -> psycopg.Connection:
    wrapper = connections[DEFAULT_DB_ALIAS]  # `connection`, looked up once
    wrapper.ensure_connection()
    raw = wrapper.connection
    if raw.prepare_threshold is None and not pooled():
        raw.prepare_threshold = NEVER_AUTOMATICALLY
    return raw


class SinkConnection:
    """One lazily opened connection, lent to the writing thread for one batch at a time.

    `with sink_connection.lent():` (a plain context manager rather than a generator's: it is
    entered for every checkpoint batch)."""

    def __init__(self, alias: str = DEFAULT_DB_ALIAS) -> None:
        self._alias = alias
        self._wrapper: BaseDatabaseWrapper | None = None
        self._lent_over: list[BaseDatabaseWrapper] = []  # the borrowers' own, innermost last

    def lent(self) -> SinkConnection:
        """Make this connection the current thread's `alias` connection until the block ends."""
        return self

    def __enter__(self) -> None:
        wrapper = self._wrapper
        if wrapper is None:
            wrapper = self._wrapper = connections.create_connection(self._alias)
            wrapper.inc_thread_sharing()
        self._lent_over.append(connections[self._alias])
        connections[self._alias] = wrapper

    def __exit__(self, *exc_info: object) -> None:
        connections[self._alias] = self._lent_over.pop()

    def close(self) -> None:
        if self._wrapper is not None:
            self._wrapper.close()


# Seconds without use after which a kept connection is tested before it is used again.
KEPT_IDLE_CHECK = 10.0


def server_spoke(raw: Any) -> bool:
    """Whether an idle connection's socket has something to read, or is gone: between
    statements the server sends nothing unless it ends the session (a shutdown's FATAL
    message, or the socket closed: a restart, a failover, pg_terminate_backend). A cheap
    look (no round trip) before a batch that must not be cut off: a statement sent on a dead
    socket fails after it went out, and its outcome is then unknown. SQLite has no socket."""
    if not isinstance(raw, psycopg.Connection):
        return False
    try:
        readable, _, _ = select.select([raw.fileno()], [], [], 0)
    except (OSError, ValueError, psycopg.Error):
        return True  # closed under us
    return bool(readable)


def drop_if_dead(idle_for: float, idle_check: float) -> None:
    """Close this thread's default connection if it is dead: tested by a round trip when it
    sat idle `idle_check` seconds or more, or when the server spoke meanwhile."""
    raw = connection.connection
    if raw is None:
        return
    if (idle_for >= idle_check or server_spoke(raw)) and not connection.is_usable():
        connection.close()


@dataclass
class _Kept:
    pid: int
    connection: SinkConnection
    last_used: float = 0.0


class KeptConnections:
    """One connection per thread for short autocommit statements, kept across Celery tasks.

    Celery's Django fix-up closes Django's connections before and after every task (unless
    CELERY_DB_REUSE_MAX is set), so a task whose first query is a rate-limit turn would connect
    to PostgreSQL for it, a few milliseconds each time. These connections are not Django's own,
    so nothing closes them between tasks; one that failed or sat idle long enough for the
    server to drop it is closed and opened again on next use.
    """

    def __init__(self, alias: str = DEFAULT_DB_ALIAS) -> None:
        self._alias = alias
        self._local = threading.local()

    @contextmanager
    def lent(self) -> Iterator[None]:
        """This thread's kept connection as its `alias` connection until the block ends."""
        kept: _Kept | None = getattr(self._local, "kept", None)
        if kept is None or kept.pid != os.getpid():  # a forked child opens its own
            kept = self._local.kept = _Kept(os.getpid(), SinkConnection(self._alias))
        with kept.connection.lent():
            drop_if_dead(time.monotonic() - kept.last_used, KEPT_IDLE_CHECK)
            try:
                yield
            except (InterfaceError, OperationalError):
                connection.close()
                raise
            finally:
                kept.last_used = time.monotonic()


_apart = KeptConnections()


def in_transaction() -> bool:
    """Whether this thread's default connection is inside an atomic block now."""
    return bool(connection.in_atomic_block)


@contextmanager
def committed_apart() -> Iterator[None]:
    """Statements in the block run on a kept connection of this thread's own, in autocommit:
    what they write commits at once, whatever the caller's open transaction then does (a
    Django task enqueued with `enqueue_on_commit` False)."""
    with _apart.lent():
        yield


def close_stale_connections() -> None:
    """Django's rule at a request's edges, at a task's: this thread's connections that failed
    or outlived CONN_MAX_AGE are closed, the others kept for the next task (with
    CELERY_DB_REUSE_MAX set, Celery's fix-up no longer closes them all around every task)."""
    close_old_connections()


def close_thread_connections() -> None:
    """Close this thread's database connections (a thread of asgiref's pool, which Django
    never closes on its own)."""
    connections.close_all()


def closing_connections(fn: Callable[..., T]) -> Callable[..., T]:
    """`fn`, closing the database connections of the thread it ran in (for a sync call an
    async caller hands to asgiref's pool)."""

    @functools.wraps(fn)
    def closing(*args: Any, **kwargs: Any) -> T:
        try:
            return fn(*args, **kwargs)
        finally:
            close_thread_connections()

    return closing


@contextmanager
def commits_without_flush() -> Iterator[None]:
    """In the block, PostgreSQL connections (this thread's, and every one opened meanwhile)
    commit without waiting for their WAL to reach the disk (`synchronous_commit = off`): a
    test database needs no durability across a server crash, and a test environment's
    workflows commit once or twice a step. Other databases: nothing changes."""
    connection_created.connect(_without_flush)
    try:
        _without_flush(None, connection)
        yield
    finally:
        connection_created.disconnect(_without_flush)
        if connection.vendor == "postgresql" and connection.connection is not None:
            with connection.cursor() as cursor:
                cursor.execute("RESET synchronous_commit")


def _without_flush(sender: object, connection: BaseDatabaseWrapper, **kwargs: object) -> None:
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET synchronous_commit TO off")
