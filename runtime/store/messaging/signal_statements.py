"""The PostgreSQL fast path of a signal's delivery: one statement.

It locks the open waits the signal satisfies (in id order, as the portable path does), closes
them with the signal, and marks their active runs woken and due now, returning the runs to
enqueue: one round trip where the portable path takes a read, a transaction's begin, four
statements and its commit. A wait closed by another emit meanwhile is skipped (its lock is
waited for, then its `closed_at` read again), so each wait takes one signal.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import connection

from runtime.models import SignalWait
from runtime.store.messaging.statement_parts import ACTIVE, RUNS, WAKE

_WAITS = SignalWait._meta.db_table
_DELIVER = f"""
WITH waits AS (
    SELECT id, run_id FROM {_WAITS}
    WHERE match_key = ANY(%s::text[]) AND closed_at IS NULL AND accepts_from <= %s
    ORDER BY id FOR UPDATE
),
closed AS (
    UPDATE {_WAITS} w SET closed_at = %s, signal_id = %s, payload = %s::jsonb
    FROM waits WHERE w.id = waits.id
    RETURNING w.run_id
),
woken AS (
    UPDATE {RUNS} r SET {WAKE}
    WHERE r.id IN (SELECT run_id FROM closed) AND r.status IN ({ACTIVE})
    RETURNING r.id, r.status, r.priority
)
SELECT (SELECT count(*) FROM closed), NULL, NULL, NULL
UNION ALL
SELECT NULL, id, status, priority FROM woken
"""


def deliver_pg(
    keys: Sequence[str], signal_id: int, payload: Any, emitted_at: datetime, now: datetime
) -> tuple[int, list[tuple[uuid.UUID, str, int]]]:
    """Close the open waits with one of the match `keys` that accept a signal emitted at
    `emitted_at`; (how many, the woken runs' (id, status, priority)). Commits, outside a
    transaction."""
    stored = SignalWait._meta.get_field("payload").get_db_prep_save(payload, connection)
    params = [list(keys), emitted_at, now, signal_id, stored, now, now]
    with connection.cursor() as cursor:
        cursor.execute(_DELIVER, params)
        rows = cursor.fetchall()
    closed = next(int(row[0]) for row in rows if row[0] is not None)
    return closed, [(row[1], row[2], row[3]) for row in rows if row[0] is None]
