"""The SQL of process liveness: advisory locks held by live processes, and leases whose
owner no longer holds one.

A process that executes runs or branches holds `pg_advisory_lock(key)` on a connection of
its own for its whole life (runtime.leases.liveness); PostgreSQL releases the lock when that
session ends, which it does when the process dies. `pg_locks` shows a bigint key as its high
half in `classid` and its low half in `objid`, with `objsubid` 1.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import connection

from runtime.models import ACTIVE_RUN_STATES, Run, Step, StepStatus
from runtime.store.dialect import in_list, postgres, run_ids_in

_HELD = (
    "SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted "
    "AND l.objsubid = 1 AND l.database = (SELECT oid FROM pg_database "
    "WHERE datname = current_database()) "
    "AND ((l.classid::bigint << 32) | l.objid::bigint) = {owner}"
)


def lock_statement() -> str:
    """Takes (waiting if need be) the session advisory lock on one key (the parameter)."""
    return "SELECT pg_advisory_lock(%s)"


def orphaned_runs(
    limit: int = 500, versions: Sequence[str] | None = None
) -> list[tuple[uuid.UUID, int]]:
    """Active runs leased by a process that no longer holds its liveness lock (of one of
    `versions`, if given: a process takes over only the runs it may run)."""
    if not postgres():
        return []
    states, params = in_list(ACTIVE_RUN_STATES)
    held = _HELD.format(owner="r.lease_owner")
    pinned = ""
    if versions is not None:
        listed, version_params = in_list(versions)
        pinned, params = f"AND r.app_version IN ({listed}) ", [*params, *version_params]
    sql = (
        f"SELECT r.id, r.lease_owner FROM {Run._meta.db_table} r "
        f"WHERE r.lease_token IS NOT NULL AND r.lease_owner IS NOT NULL "
        f"AND r.status IN ({states}) {pinned}AND NOT EXISTS ({held}) LIMIT %s"
    )
    return _rows(sql, [*params, limit])


def orphaned_branches(
    limit: int = 500, versions: Sequence[str] | None = None
) -> list[tuple[uuid.UUID, int, uuid.UUID]]:
    """(id, owner, run id) of the running branch steps whose process no longer holds its
    liveness lock (of runs of one of `versions`, if given).

    It cannot name a run (a running branch may be in any week: a long-lived run's), so it
    reads every week's partition; but only through the partial index of running steps, whose
    entries a finished week no longer has: a probe of an empty index per week."""
    if not postgres():
        return []
    held = _HELD.format(owner="s.lease_owner")
    pinned, params = "", list[str]()
    if versions is not None:
        listed, params = in_list(versions)
        pinned = (
            f"AND EXISTS (SELECT 1 FROM {Run._meta.db_table} r WHERE r.id = s.run_id "
            f"AND r.app_version IN ({listed})) "
        )
    sql = (
        f"SELECT s.id, s.lease_owner, s.run_id FROM {Step._meta.db_table} s "
        # The status is written out, not bound, so that the partial index on running steps
        # (step_running_owner_idx) matches a prepared statement's plan too.
        f"WHERE s.status = '{StepStatus.RUNNING.value}' AND s.lease_owner IS NOT NULL "
        f"AND NOT EXISTS ({held}) {pinned}LIMIT %s"
    )
    return _rows(sql, [*params, limit])


def expire_run_leases(orphans: list[tuple[uuid.UUID, int]], now: datetime) -> list[uuid.UUID]:
    """End the leases of these runs if the same owner still holds them; returns those ended."""
    return _expire(Run._meta.db_table, "lease_expires_at", "lease_token IS NOT NULL", orphans, now)


def expire_branch_leases(
    orphans: list[tuple[uuid.UUID, int, uuid.UUID]], now: datetime
) -> list[tuple[uuid.UUID, uuid.UUID]]:
    """End the leases (wake_at) of these running branches (id, owner, run id) if the same
    owner still runs them; returns (run id, step id) of those ended. The statement names the
    branches' runs, so that it reads their weeks' partitions only."""
    if not orphans:
        return []
    by_run, params = run_ids_in("t", [run_id for _, _, run_id in orphans])
    running = f"status = '{StepStatus.RUNNING.value}' AND {by_run}"
    pairs = [(step, owner) for step, owner, _ in orphans]
    ended = set(_expire(Step._meta.db_table, "wake_at", running, pairs, now, params))
    return [(run_id, step) for step, _, run_id in orphans if step in ended]


def _expire(
    table: str,
    column: str,
    condition: str,
    orphans: list[tuple[uuid.UUID, int]],
    now: datetime,
    condition_params: list[Any] | None = None,
) -> list[uuid.UUID]:
    if not orphans:
        return []
    pairs = ", ".join(["(%s::uuid, %s::bigint)"] * len(orphans))
    sql = (
        f"UPDATE {table} t SET {column} = %s FROM (VALUES {pairs}) AS o(id, owner) "
        f"WHERE t.id = o.id AND t.lease_owner = o.owner AND t.{condition} "
        f"AND t.{column} > %s RETURNING t.id"
    )
    pairs_params = (v for pair in orphans for v in pair)
    params: list[Any] = [now, *pairs_params, *(condition_params or []), now]
    return [row[0] for row in _rows(sql, params)]


def _rows(sql: str, params: list[Any]) -> list[Any]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return list(cursor.fetchall())
