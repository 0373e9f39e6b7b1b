"""The PostgreSQL fast path of a plain send (no idempotency key, not from workflow code): one
statement locks the run, inserts the message if the run is active, and marks the run woken
and due now, instead of a transaction's begin, five statements and its commit. A send that
may repeat an earlier one takes the transaction path, which finds the earlier message.

A `ctx.recv`'s receipt is one statement too (the message its position took before, else the
oldest untaken one on its topic, marked), committed without waiting for the WAL flush as an
update's receipt is: lost with the server, the replay takes the same oldest message again."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from runtime.models import Message
from runtime.store.history.payload_forms import StoredForms
from runtime.store.messaging.statement_parts import (
    ACTIVE,
    NO_FLUSH,
    RUNS,
    WAKE,
    decoded,
    encoded,
    prepared,
)

_MESSAGES = Message._meta.db_table
_SEND = f"""
WITH locked AS (SELECT id, status, priority, warm_queue FROM {RUNS} WHERE id = %s FOR UPDATE),
inserted AS (
    INSERT INTO {_MESSAGES} (run_id, topic, value, sent_by, created_at)
    SELECT id, %s, %s::jsonb, %s::jsonb, %s FROM locked WHERE locked.status IN ({ACTIVE})
    RETURNING id, run_id
),
woken AS (
    UPDATE {RUNS} r SET {WAKE}
    FROM inserted WHERE r.id = inserted.run_id
    RETURNING r.id
)
SELECT status, priority, (SELECT id FROM inserted), (SELECT count(*) FROM woken), warm_queue
FROM locked
"""


def send_pg(
    rid: uuid.UUID, topic: str, value: Any, by: dict[str, Any] | None, now: datetime
) -> tuple[str, int, int | None, str | None] | None:
    """Send a plain message (see the module): the run's (status, priority, the message's id or
    None when the run has finished, its warm queue), or None for no such run. Commits,
    outside a transaction."""
    stored = encoded(Message, "value", StoredForms().form(value, rid))
    params = [rid, topic, stored, encoded(Message, "sent_by", by), now, now, now]
    rows = prepared(_SEND, params)
    return (rows[0][0], rows[0][1], rows[0][2], rows[0][4]) if rows else None


_TAKE = f"""
WITH no_flush AS ({NO_FLUSH}),
prior AS (SELECT id, value, sent_by FROM {_MESSAGES} WHERE run_id = %s AND received_position = %s),
oldest AS (
    SELECT id FROM {_MESSAGES}
    WHERE run_id = %s AND topic = %s AND received_position IS NULL
      AND NOT EXISTS (SELECT 1 FROM prior)
    ORDER BY id LIMIT 1 FOR UPDATE
),
took AS (
    UPDATE {_MESSAGES} m SET received_position = %s, received_at = %s
    FROM oldest, no_flush WHERE m.id = oldest.id
    RETURNING m.id, m.value, m.sent_by
)
SELECT * FROM prior UNION ALL SELECT * FROM took
"""


def take_pg(
    run_id: uuid.UUID, topic: str, position: int, now: datetime
) -> tuple[int, Any, Any] | None:
    """(id, value, sent_by) of the message the `ctx.recv` at `position` takes, or None."""
    rows = prepared(_TAKE, [run_id, position, run_id, topic, position, now])
    if not rows:
        return None
    row = rows[0]
    return int(row[0]), decoded(Message, "value", row[1]), decoded(Message, "sent_by", row[2])
