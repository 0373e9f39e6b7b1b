"""The SQL of open-stream slots: PostgreSQL advisory locks that count a user's open streams
across every web process.

A stream holds the session lock `(NAMESPACE + slot, user key)` (the two-key form: `pg_locks`
shows it with `objsubid` 2, apart from the bigint liveness locks) for as long as it streams.
PostgreSQL drops the lock when the session ends, so a web process that dies frees its slots.
A session may take an advisory lock it already holds a second time, so the slots held, by this
session too, are read from `pg_locks` first and never taken twice.
"""

from __future__ import annotations

from django.db import connection

NAMESPACE = 0x46460000  # "FF" and the slot number in the first key
USER_KEYS = 2**31  # the second key is an int4: user ids past it share slots modulo this

_HELD = (
    "SELECT l.classid::bigint - %s FROM pg_locks l WHERE l.locktype = 'advisory' "
    "AND l.granted AND l.objsubid = 2 AND l.objid::bigint = %s "
    "AND l.classid::bigint >= %s AND l.classid::bigint < %s "
    "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
)


def take_slot(user_id: int, slots: int) -> int | None:
    """Lock a free one of the user's `slots` stream slots on this connection; None if all are
    held (by any web process)."""
    key = user_id % USER_KEYS
    with connection.cursor() as cursor:
        cursor.execute(_HELD, [NAMESPACE, key, NAMESPACE, NAMESPACE + slots])
        held = {int(row[0]) for row in cursor.fetchall()}
        for slot in range(slots):
            if slot in held:
                continue
            cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [NAMESPACE + slot, key])
            if cursor.fetchone()[0]:
                return slot
    return None


def release_slot(user_id: int, slot: int) -> None:
    """Unlock a slot this connection took."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [NAMESPACE + slot, user_id % USER_KEYS])
