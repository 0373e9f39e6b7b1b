"""The LISTEN side of run notifications: one PostgreSQL connection of its own per process.

It is not Django's connection: it stays in autocommit, idle between notifications, and
belongs to the one thread that listens (runtime.streaming.wakeups). A LISTEN needs a session
of its own, so it goes past any pooler (runtime.store.direct).
"""

from __future__ import annotations

from collections.abc import Callable

import psycopg

from runtime.store.dialect import postgres
from runtime.store.direct import open_direct
from runtime.store.messaging.streams import CHANNEL


def can_listen() -> bool:
    """True when the database delivers notifications (PostgreSQL)."""
    return postgres()


def open_listener() -> psycopg.Connection:
    """A new direct autocommit connection to the database, listening on the run channel."""
    raw = open_direct("fanfold-listener")
    raw.execute(f"LISTEN {CHANNEL}")
    return raw


def drain(raw: psycopg.Connection, on_notify: Callable[[str], None], timeout: float) -> None:
    """Hand every notification that arrives within `timeout` seconds to `on_notify`."""
    for note in raw.notifies(timeout=timeout):
        on_notify(note.payload)
