"""Admission of runs under a workflow's `concurrency` limit: decided in the database.

Every admission for one (workflow, concurrency key) first upserts that key's slot row, which
locks it until the transaction ends: two workers admitting at once take turns, and the second
counts the first one's admissions. Slots in use are counted from the runs themselves (admitted
and active), so a run frees its slot with the very write that finishes, fails or cancels it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime
from functools import partial

from django.db import connection, transaction

from runtime.core.clock import current_time
from runtime.models import ACTIVE_RUN_STATES, ConcurrencySlot, Run, RunStatus
from runtime.store.dialect import as_uuid, execute, in_list, postgres, time_param

_RUN = Run._meta.db_table
_SLOT = ConcurrencySlot._meta.db_table


def admit_next_txn(
    workflow: str, key: str, capacity: int, now: datetime
) -> list[tuple[uuid.UUID, int]]:
    """Admit as many pending runs of (workflow, key) as there are free slots, highest priority
    first, then oldest; returns their (id, priority). Call inside a transaction (the slot lock
    is held until it commits); the caller enqueues the runs after commit.

    Two statements in one round trip (a pipeline on PostgreSQL): the second starts once the
    first holds the slot lock, so its snapshot sees every admission committed before.
    """
    states, state_params = in_list(ACTIVE_RUN_STATES)
    lock = (
        f"INSERT INTO {_SLOT} (workflow, key, capacity, updated_at) VALUES (%s, %s, %s, %s) "
        "ON CONFLICT (workflow, key) DO UPDATE SET capacity = EXCLUDED.capacity, "
        "updated_at = EXCLUDED.updated_at"
    )
    in_use = (
        f"SELECT count(*) FROM {_RUN} WHERE workflow = %s AND concurrency_key = %s "
        f"AND admitted = %s AND status IN ({states})"
    )
    greatest = "GREATEST" if postgres() else "MAX"  # SQLite's two-argument max() is scalar
    # The outer status test is checked again after a row lock wait (a cancel racing us).
    admit = (
        f"UPDATE {_RUN} SET admitted = %s, wake_at = %s, updated_at = %s "
        f"WHERE status = %s AND id IN (SELECT id FROM {_RUN} WHERE workflow = %s "
        "AND concurrency_key = %s AND status = %s AND admitted = %s "
        f"ORDER BY priority DESC, created_at, id LIMIT {greatest}(%s - ({in_use}), 0)) "
        "RETURNING id, priority"
    )
    at = time_param(now)
    _, admitted = execute(
        [
            (lock, [workflow, key, capacity, at]),
            (
                admit,
                [
                    True,
                    at,
                    at,
                    str(RunStatus.PENDING.value),
                    workflow,
                    key,
                    str(RunStatus.PENDING.value),
                    False,
                    capacity,
                    workflow,
                    key,
                    True,
                    *state_params,
                ],
            ),
        ]
    )
    return [(as_uuid(row[0]), int(row[1])) for row in admitted]


def slots_in_use() -> dict[tuple[str, str], int]:
    """Admitted active runs by (workflow, concurrency key): what the admin shows."""
    states, state_params = in_list(ACTIVE_RUN_STATES)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT workflow, concurrency_key, count(*) FROM {_RUN} "
            f"WHERE concurrency_key IS NOT NULL AND admitted = %s AND status IN ({states}) "
            "GROUP BY workflow, concurrency_key",
            [True, *state_params],
        )
        return {(row[0], row[1]): int(row[2]) for row in cursor.fetchall()}


def admit_next(
    workflow: str, key: str, capacity: int, then: Callable[[uuid.UUID, int], object]
) -> list[tuple[uuid.UUID, int]]:
    """Admit the next pending runs of (workflow, key) into its free slots, in a transaction of
    its own; `then(run_id, priority)` runs for each once that commits. (id, priority) of each."""
    with transaction.atomic():
        admitted = admit_next_txn(workflow, key, capacity, current_time())
        for run_id, priority in admitted:
            transaction.on_commit(partial(then, run_id, priority))
    return admitted


def release_all(workflow: str, then: Callable[[uuid.UUID, int], object]) -> int:
    """Admit every waiting run of the workflow at once (it no longer declares a limit);
    `then(run_id, priority)` runs for each once that commits. How many."""
    with transaction.atomic():
        rows = list(
            Run.objects.select_for_update()
            .filter(workflow=workflow, status=RunStatus.PENDING, admitted=False)
            .values_list("id", "priority")
        )
        Run.objects.filter(id__in=[run_id for run_id, _ in rows]).update(
            admitted=True, wake_at=current_time()
        )
        for run_id, priority in rows:
            transaction.on_commit(partial(then, run_id, priority))
    return len(rows)


def waits_for_slot(run_id: uuid.UUID, workflow: str) -> str | None:
    """The run's concurrency key when some run of that key still waits to be admitted, else
    None (a finished run's slot then has nobody to go to)."""
    key = Run.objects.filter(id=run_id).values_list("concurrency_key", flat=True).first()
    if key is None:
        return None
    waiting = Run.objects.filter(
        workflow=workflow, concurrency_key=key, status=RunStatus.PENDING, admitted=False
    )
    return key if waiting.exists() else None


def keys_waiting() -> list[tuple[str, str | None]]:
    """(workflow, concurrency key) of every key with runs waiting to be admitted."""
    waiting = Run.objects.filter(status=RunStatus.PENDING, admitted=False)
    return list(waiting.values_list("workflow", "concurrency_key").distinct())
