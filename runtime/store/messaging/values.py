"""Run values: the latest value of each key a run set, kept by the position that set it.

On PostgreSQL the set is one prepared upsert (with the notification of the run's readers) and
the read one prepared SELECT: the values table is partitioned, and planning a statement over
its partitions each time cost more than running it (a set was an UPDATE, then a savepoint's
INSERT for a new key, each planned anew)."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import IntegrityError, transaction

from runtime.core.clock import current_time
from runtime.models import Run, RunValue
from runtime.store.dialect import postgres
from runtime.store.history.payload_forms import StoredForms
from runtime.store.messaging.statement_parts import decoded, encoded, prepared
from runtime.store.messaging.streams import CHANNEL

_VALUES = RunValue._meta.db_table
_UPSERT = f"""
INSERT INTO {_VALUES} (run_id, key, value, position, updated_at) VALUES (%s, %s, %s::jsonb, %s, %s)
ON CONFLICT (run_id, key) DO UPDATE
SET value = EXCLUDED.value, position = EXCLUDED.position, updated_at = EXCLUDED.updated_at
WHERE {_VALUES}.position <= EXCLUDED.position
"""
# The set and the notification of the run's readers elsewhere, which leaves with its commit.
_UPSERT_NOTIFY = f"WITH upserted AS ({_UPSERT}) SELECT pg_notify(%s, %s)"
_LATEST = f"SELECT value FROM {_VALUES} WHERE run_id = %s AND key = %s"


def upsert_value(
    run_id: uuid.UUID, key: str, value: Any, position: int, *, notify: bool = False
) -> bool:
    """Record `value` (in its stored form) as the run's value of `key` unless a later position
    set one. With `notify`, on PostgreSQL, the same statement notifies the processes that
    listen for the run (runtime.streaming.wakeups); returns whether it did."""
    now = current_time()
    value = StoredForms().form(value, run_id)  # encrypted or offloaded like every payload
    if postgres():
        params = [run_id, key, encoded(RunValue, "value", value), position, now]
        if notify:
            prepared(_UPSERT_NOTIFY, [*params, CHANNEL, str(run_id)])
        else:
            prepared(_UPSERT, params)
        return notify
    newer = RunValue.objects.filter(run_id=run_id, key=key, position__lte=position)
    if not newer.update(value=value, position=position, updated_at=now):
        try:
            with transaction.atomic():
                RunValue.objects.create(
                    run_id=run_id, key=key, value=value, position=position, updated_at=now
                )
        except IntegrityError:  # set meanwhile (a replay racing a zombie): keep the later one
            newer.update(value=value, position=position, updated_at=now)
    return False


def run_exists(run_id: uuid.UUID) -> bool:
    """Whether there is such a run."""
    return Run.objects.filter(id=run_id).exists()


def latest_value(run_id: uuid.UUID, key: str, missing: Any = None) -> Any:
    """The run's committed value of `key`, or `missing` when it has set none."""
    if postgres():
        rows = prepared(_LATEST, [run_id, key])
        return decoded(RunValue, "value", rows[0][0]) if rows else missing
    values = RunValue.objects.filter(run_id=run_id, key=key).values_list("value", flat=True)
    found = list(values[:1])
    return found[0] if found else missing
