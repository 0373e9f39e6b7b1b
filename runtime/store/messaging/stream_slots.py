"""The SQL of open-stream slots: PostgreSQL advisory locks that count a user's open streams
across every web process.

A stream holds the session lock `(NAMESPACE + slot, user key)` (the two-key form: `pg_locks`
shows it with `objsubid` 2, apart from the bigint liveness locks) for as long as it streams.
PostgreSQL drops the lock when the session ends, so a web process that dies frees its slots.
A session may take an advisory lock it already holds a second time, so the slots held, by this
session too, are read from `pg_locks` first and never taken twice.

The locks live on one direct session per process (runtime.store.direct: a pooler in
transaction mode would leave them on whichever server connection it lent), shared by the
process's streams one statement at a time. If that session is lost, its slots went with it:
a release is only sent on the session that took the slot, never on its replacement, where
the same lock may now be another stream's.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import psycopg

from runtime.process.local import ProcessLocal
from runtime.store.direct import open_direct

NAMESPACE = 0x46460000  # "FF" and the slot number in the first key
USER_KEYS = 2**31  # the second key is an int4: user ids past it share slots modulo this

_HELD = (
    "SELECT l.classid::bigint - %s FROM pg_locks l WHERE l.locktype = 'advisory' "
    "AND l.granted AND l.objsubid = 2 AND l.objid::bigint = %s "
    "AND l.classid::bigint >= %s AND l.classid::bigint < %s "
    "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
)


@dataclass(frozen=True)
class HeldSlot:
    """A slot locked on one session of this process (`session`: which one)."""

    slot: int
    session: int


class _SlotSession:
    """This process's session that holds its streams' slot locks."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._raw: psycopg.Connection | None = None
        self._number = 0

    def take(self, user_id: int, slots: int) -> HeldSlot | None:
        key = user_id % USER_KEYS
        with self._lock:
            raw = self._session()
            held = {
                int(row[0])
                for row in raw.execute(_HELD, [NAMESPACE, key, NAMESPACE, NAMESPACE + slots])
            }
            for slot in range(slots):
                if slot in held:
                    continue
                taken = raw.execute("SELECT pg_try_advisory_lock(%s, %s)", [NAMESPACE + slot, key])
                row = taken.fetchone()
                if row is not None and row[0]:
                    return HeldSlot(slot, self._number)
        return None

    def release(self, user_id: int, held: HeldSlot) -> None:
        with self._lock:
            raw = self._raw
            if raw is None or raw.closed or held.session != self._number:
                return  # the session that held it is gone, and its locks with it
            try:
                key = user_id % USER_KEYS
                raw.execute("SELECT pg_advisory_unlock(%s, %s)", [NAMESPACE + held.slot, key])
            except psycopg.Error:
                raw.close()  # its locks go with it; the next stream opens another session

    def _session(self) -> psycopg.Connection:
        raw = self._raw
        if raw is not None and not raw.closed and not raw.broken:
            return raw
        if raw is not None:
            raw.close()
        self._raw = open_direct()
        self._number += 1
        return self._raw

    def close(self) -> None:
        with self._lock:
            if self._raw is not None:
                self._raw.close()
            self._raw = None


_session: ProcessLocal[_SlotSession] = ProcessLocal(_SlotSession)


def take_slot(user_id: int, slots: int) -> HeldSlot | None:
    """Lock a free one of the user's `slots` stream slots; None if all are held (by any web
    process)."""
    try:
        return _session.get().take(user_id, slots)
    except psycopg.OperationalError:
        _session.get().close()  # a session the server ended: one more try on a new one
        return _session.get().take(user_id, slots)


def release_slot(user_id: int, held: HeldSlot) -> None:
    """Unlock a slot this process took."""
    _session.get().release(user_id, held)


def close_slot_session() -> None:
    """Close this process's slot session, freeing its slots (tests, before dropping the
    database)."""
    if _session.built():
        _session.get().close()
