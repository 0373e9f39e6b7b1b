"""The PostgreSQL fast path of a plain send (no idempotency key, not from workflow code): one
statement locks the run, inserts the message if the run is active, and marks the run woken
and due now, instead of a transaction's begin, five statements and its commit. A send that
may repeat an earlier one takes the transaction path, which finds the earlier message."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from django.db import connection

from runtime.models import ACTIVE_RUN_STATES, Message, Run
from runtime.store.history.payload_forms import StoredForms

_MESSAGES = Message._meta.db_table
_RUNS = Run._meta.db_table
_ACTIVE = ", ".join(f"'{state}'" for state in ACTIVE_RUN_STATES)
_SEND = f"""
WITH locked AS (SELECT id, status, priority FROM {_RUNS} WHERE id = %s FOR UPDATE),
inserted AS (
    INSERT INTO {_MESSAGES} (run_id, topic, value, sent_by, created_at)
    SELECT id, %s, %s::jsonb, %s::jsonb, %s FROM locked WHERE locked.status IN ({_ACTIVE})
    RETURNING id, run_id
),
woken AS (
    UPDATE {_RUNS} r SET wakeups = r.wakeups + 1, wake_at = %s, updated_at = %s
    FROM inserted WHERE r.id = inserted.run_id
    RETURNING r.id
)
SELECT status, priority, (SELECT id FROM inserted), (SELECT count(*) FROM woken) FROM locked
"""


def send_pg(
    rid: uuid.UUID, topic: str, value: Any, by: dict[str, Any] | None, now: datetime
) -> tuple[str, int, int | None] | None:
    """Send a plain message (see the module): the run's (status, priority, the message's id or
    None when the run has finished), or None for no such run. Commits, outside a
    transaction."""
    stored = Message._meta.get_field("value").get_db_prep_save(
        StoredForms().form(value, rid), connection
    )
    sent_by = Message._meta.get_field("sent_by").get_db_prep_save(by, connection)
    params = [rid, topic, stored, sent_by, now, now, now]
    with connection.cursor() as cursor:
        cursor.execute(_SEND, params)
        row = cursor.fetchone()
    return None if row is None else (row[0], row[1], row[2])
