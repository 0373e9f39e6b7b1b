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

from runtime.models import Signal, SignalKeyset, SignalWait
from runtime.store.messaging.statement_parts import ACTIVE, RUNS, WAKE, decoded, encoded, prepared

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
    RETURNING r.id, r.status, r.priority, r.warm_queue
)
SELECT (SELECT count(*) FROM closed), NULL, NULL, NULL, NULL
UNION ALL
SELECT NULL, id, status, priority, warm_queue FROM woken
"""


def deliver_pg(
    keys: Sequence[str], signal_id: int, payload: Any, emitted_at: datetime, now: datetime
) -> tuple[int, list[tuple[uuid.UUID, str, int, str | None]]]:
    """Close the open waits with one of the match `keys` that accept a signal emitted at
    `emitted_at`; (how many, the woken runs' (id, status, priority, warm queue)). Commits,
    outside a
    transaction."""
    stored = encoded(SignalWait, "payload", payload)
    params = [list(keys), emitted_at, now, signal_id, stored, now, now]
    rows = prepared(_DELIVER, params)
    closed = next(int(row[0]) for row in rows if row[0] is not None)
    return closed, [(row[1], row[2], row[3], row[4]) for row in rows if row[0] is None]


_SIGNALS = Signal._meta.db_table
_WAIT_AT = f"""
SELECT w.id, w.name, w.signal_id, w.payload, w.closed_at,
       (SELECT s.emitted_by FROM {_SIGNALS} s WHERE s.id = w.signal_id)
FROM {_WAITS} w WHERE w.run_id = %s AND w.position = %s
"""


def wait_at_pg(run_id: uuid.UUID, position: int) -> SignalWait | None:
    """The run's wait at `position` (what a resume reads of it: its signal, payload and
    close) with `emitted_by` of the signal it took, or None."""
    rows = prepared(_WAIT_AT, [run_id, position])
    if not rows:
        return None
    wait_id, name, signal_id, payload, closed_at, by = rows[0]
    wait = SignalWait(id=wait_id, run_id=run_id, position=position, name=name,
                      signal_id=signal_id, payload=decoded(SignalWait, "payload", payload),
                      closed_at=closed_at)  # fmt: skip
    wait.emitted_by = decoded(Signal, "emitted_by", by)  # type: ignore[attr-defined]
    return wait


_INSERT_SIGNAL = f"""
INSERT INTO {_SIGNALS} (name, payload, idempotency_key, emitted_by, created_at)
VALUES (%s, %s::jsonb, NULL, %s::jsonb, %s) RETURNING id
"""
_KEYSETS = f"SELECT keys FROM {SignalKeyset._meta.db_table} WHERE name = %s"


def insert_signal_pg(signal: Signal) -> None:
    """Insert `signal` (one without an idempotency key) and set its id."""
    params = [signal.name, encoded(Signal, "payload", signal.payload),
              encoded(Signal, "emitted_by", signal.emitted_by), signal.created_at]  # fmt: skip
    ((signal.id,),) = prepared(_INSERT_SIGNAL, params)


def keysets_pg(name: str) -> list[Any]:
    """The match key sets that waits for signal `name` registered."""
    return [decoded(SignalKeyset, "keys", keys) for (keys,) in prepared(_KEYSETS, [name])]
