"""The PostgreSQL fast path of an update's acceptance, receipt and answer: one statement each.

The acceptance locks the run, inserts the update if the run is active (a repeated id inserts
nothing), marks the run woken and due now, and notifies its listeners, in one round trip
instead of a transaction's nine; unflushed when the caller waits for the answer (whose
flushed commit flushes it too).

The receipt marks the oldest untaken update (or finds the one the position took before) and
commits without waiting for the WAL flush: lost with the server, the replay takes the same
oldest update again. The answer commits flushed (the caller acts on it, and the flush takes
the earlier unflushed commits with it) and notifies the run's listeners in the same
statement, so the waiting caller wakes the moment it commits.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import connection

from runtime.models import Run, RunUpdate
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
from runtime.store.messaging.streams import CHANNEL

_TABLE = RunUpdate._meta.db_table
COLUMNS = "update_id, name, payload, status, reply, reason, sent_by"

_TAKE = f"""
WITH no_flush AS ({NO_FLUSH}),
prior AS (
    SELECT {COLUMNS} FROM {_TABLE} WHERE run_id = %s AND received_position = %s
),
oldest AS (
    SELECT id FROM {_TABLE}
    WHERE run_id = %s AND received_position IS NULL
      AND (cardinality(%s::text[]) = 0 OR name = ANY(%s::text[]))
      AND NOT EXISTS (SELECT 1 FROM prior)
    ORDER BY id LIMIT 1 FOR UPDATE
),
took AS (
    UPDATE {_TABLE} u SET received_position = %s, received_at = %s
    FROM oldest, no_flush WHERE u.id = oldest.id AND u.run_id = %s
    RETURNING u.update_id, u.name, u.payload, u.status, u.reply, u.reason, u.sent_by
)
SELECT * FROM prior UNION ALL SELECT * FROM took
"""

_ACCEPT = f"""
WITH locked AS (SELECT id, status, priority, warm_queue FROM {RUNS} WHERE id = %s FOR UPDATE),
inserted AS (
    INSERT INTO {_TABLE} (run_id, update_id, name, payload, status, sent_by, created_at)
    SELECT id, %s, %s, %s::jsonb, 'pending', %s::jsonb, %s FROM locked{{no_flush}}
    WHERE locked.status IN ({ACTIVE})
    ON CONFLICT (run_id, update_id) DO NOTHING
    RETURNING run_id
),
woken AS (
    UPDATE {RUNS} r SET {WAKE}
    FROM inserted WHERE r.id = inserted.run_id
    RETURNING r.id
),
notified AS (SELECT pg_notify(%s, %s) FROM inserted)
SELECT status, priority, EXISTS (SELECT 1 FROM inserted), (SELECT count(*) FROM notified),
    warm_queue
FROM locked
"""
_NO_FLUSH = f", ({NO_FLUSH}) AS no_flush"
_ACCEPT_FLUSHED = _ACCEPT.replace("{no_flush}", "")
_ACCEPT_UNFLUSHED = _ACCEPT.replace("{no_flush}", _NO_FLUSH)

_ANSWER = f"""
WITH answered AS (
    UPDATE {_TABLE} SET status = %s, reply = %s::jsonb, reason = %s,
        answered_position = %s, answered_at = %s
    WHERE run_id = %s AND update_id = %s AND status = 'pending'
    RETURNING run_id
)
SELECT pg_notify(%s, %s) FROM answered
"""


def _decoded(row: Sequence[Any]) -> tuple[Any, ...]:
    """A row of COLUMNS with its JSON columns read as the model reads them."""
    values = list(row)
    for i, name in ((2, "payload"), (4, "reply"), (6, "sent_by")):
        values[i] = decoded(RunUpdate, name, values[i])
    return tuple(values)


def take_update_pg(
    rid: uuid.UUID, names: Sequence[str], position: int, now: datetime
) -> tuple[Any, ...] | None:
    """The COLUMNS of the update the `ctx.next_update` at `position` takes, or None."""
    params: list[Any] = [rid, position, rid, list(names), list(names), position, now, rid]
    rows = prepared(_TAKE, params)
    return _decoded(rows[0]) if rows else None


def accept_update_pg(
    rid: uuid.UUID,
    update_id: str,
    name: str,
    payload: Any,
    by: dict[str, Any] | None,
    now: datetime,
    flush: bool,
) -> tuple[str, int, bool, str | None] | None:
    """Accept the update (see the module): the run's (status, priority, whether this call
    inserted the update, its warm queue), or None for no such run. Outside a transaction: it
    commits."""
    stored = encoded(RunUpdate, "payload", StoredForms().form(payload, rid))
    sent_by = encoded(RunUpdate, "sent_by", by)
    params = [rid, update_id, name, stored, sent_by, now, now, now, CHANNEL, str(rid)]
    rows = prepared(_ACCEPT_FLUSHED if flush else _ACCEPT_UNFLUSHED, params)
    return (rows[0][0], rows[0][1], bool(rows[0][2]), rows[0][4]) if rows else None


def answer_update_pg(
    rid: uuid.UUID,
    update_id: str,
    status: str,
    reply: Any,
    reason: str | None,
    position: int,
    now: datetime,
) -> bool:
    """Write the first answer and notify the run's listeners with its commit; False if the
    update had an answer already."""
    stored = encoded(
        RunUpdate, "reply", StoredForms().form(reply, rid) if reply is not None else None
    )
    params = [status, stored, reason, position, now, rid, update_id, CHANNEL, str(rid)]
    return bool(prepared(_ANSWER, params))


def no_flush() -> None:
    """This transaction's commit does not wait for the WAL flush (inside an atomic block)."""
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL synchronous_commit = off")


_RUN_STATE = f"SELECT workflow, status, error FROM {RUNS} WHERE id = %s"
_ANSWER_AND_RUN = (
    f"SELECT {', '.join('u.' + c for c in COLUMNS.split(', '))}, r.workflow, r.status, r.error"
    f" FROM {_TABLE} u JOIN {RUNS} r ON r.id = u.run_id WHERE u.run_id = %s AND u.update_id = %s"
)


def run_state_pg(rid: uuid.UUID) -> tuple[str, str, Any] | None:
    """The run's (workflow, status, error), or None for no such run."""
    rows = prepared(_RUN_STATE, [rid])
    if not rows:
        return None
    workflow, status, error = rows[0]
    return workflow, status, decoded(Run, "error", error)


def answer_and_run_pg(rid: uuid.UUID, update_id: str) -> tuple[Any, ...] | None:
    """The update's COLUMNS, then its run's workflow, status and error, in one read (one
    snapshot), or None for no such update: what a caller waiting for the answer reads."""
    rows = prepared(_ANSWER_AND_RUN, [rid, update_id])
    if not rows:
        return None
    *update, workflow, status, error = rows[0]
    return (*_decoded(update), workflow, status, decoded(Run, "error", error))
