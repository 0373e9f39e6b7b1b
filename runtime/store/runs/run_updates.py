"""The guarded UPDATE of the run row that every checkpoint batch's run part starts with.

It allocates the part's event seqs (`last_seq`), applies its run patch and checks its guard:
no row comes back when the guard fails. A suspend (`SuspendGuard`) is checked for the lease
only; its own patch (`RunPart.suspend`: waiting, the lease given back) is applied only if the
run's wake-ups are still those the executor read, each of its columns as a CASE, so a suspend
that lost the race with a wake-up still commits the writes that led to it, in the same
statement, and the returned `wakeups` says which way it went.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from functools import cache
from typing import Any

from django.db import connection

from runtime.core.writes import Guard, LeaseGuard, RunPatch, SuspendGuard, UnfinishedGuard
from runtime.models import ACTIVE_RUN_STATES, Run
from runtime.store.dialect import adapter, in_list, postgres
from runtime.store.history.columns import JSON_COLUMNS

_LEASE_COLUMNS = ("lease_token", "lease_expires_at", "lease_owner")


def run_update_statement(
    guard: Guard,
    events: int,
    wakes: int,
    patch: RunPatch | None,
    now: datetime,
    *,
    run_id: uuid.UUID,
    suspend: RunPatch | None = None,
) -> tuple[str, list[Any]]:
    """The guarded `UPDATE runtime_run ... RETURNING last_seq, wakeups` of one run in a batch;
    `suspend`, under a SuspendGuard, is the patch applied only if the run was not woken."""
    as_time = adapter("time")
    params: list[Any] = [events, as_time(now)]
    if wakes:
        params.append(wakes)
    plain = _values(patch)
    if not isinstance(guard, SuspendGuard):
        suspend = None
    conditional = _values(suspend)
    columns = tuple(c for c in plain if c not in conditional)
    params += [plain[c] for c in columns]
    if isinstance(guard, SuspendGuard):
        not_woken = [wakes, guard.wakeups] if wakes else [guard.wakeups]
        for column, value in conditional.items():
            params += [*not_woken, value] + ([plain[column]] if column in plain else [])
        if suspend is not None and suspend.release_lease:
            params += not_woken * len(_LEASE_COLUMNS)
    release = patch is not None and patch.release_lease
    release_if = suspend is not None and suspend.release_lease
    params.append(adapter("uuid")(run_id))
    if isinstance(guard, LeaseGuard | SuspendGuard):
        params.append(guard.token)
    elif isinstance(guard, UnfinishedGuard):
        params.extend(in_list(ACTIVE_RUN_STATES)[1])
    shape: _Shape = (
        type(guard),
        bool(wakes),
        columns,
        tuple((c, c in plain) for c in conditional),
        release and not release_if,
        release_if,
        postgres(),
    )
    return _run_update_sql(shape), params


def _values(patch: RunPatch | None) -> dict[str, Any]:
    """The patch's columns with their values adapted for the statement."""
    if patch is None:
        return {}
    as_time, as_json = adapter("time"), adapter("json")
    values = {}
    for column, value in patch.columns().items():
        if column in JSON_COLUMNS:
            value = as_json(value)
        elif isinstance(value, datetime):
            value = as_time(value)
        values[column] = value
    return values


def _typed(column: str, pg: bool) -> str:
    """A parameter for `column` in a CASE: typed on PostgreSQL, which would take a NULL in both
    branches for text (SQLite takes any value as it comes)."""
    if not pg:
        return "%s"
    return f"%s::{Run._meta.get_field(column).db_type(connection)}"


# The guard's kind, whether the part wakes the run, the plain columns, the conditional ones
# (each: whether the plain patch sets it too), the lease given back plainly or conditionally,
# and whether the database is PostgreSQL.
_Shape = tuple[type, bool, tuple[str, ...], tuple[tuple[str, bool], ...], bool, bool, bool]


@cache
def _run_update_sql(shape: _Shape) -> str:
    """The text of `run_update_statement` for one shape: a checkpoint's few shapes are built
    once, its parameters gathered per batch."""
    guard, wakes, columns, conditional, release_lease, release_if, pg = shape
    sets = ["last_seq = last_seq + %s", "updated_at = %s"]
    if wakes:
        sets.append("wakeups = wakeups + %s")
    sets += [f"{column} = %s" for column in columns]
    # The SET expressions read the row as it was: with wake-ups of its own the part compares
    # what the row will hold.
    not_woken = "wakeups + %s = %s" if wakes else "wakeups = %s"
    for column, also_plain in conditional:
        value = _typed(column, pg)
        otherwise = value if also_plain else column
        sets.append(f"{column} = CASE WHEN {not_woken} THEN {value} ELSE {otherwise} END")
    if release_if:
        sets += [f"{c} = CASE WHEN {not_woken} THEN NULL ELSE {c} END" for c in _LEASE_COLUMNS]
    where = ["id = %s"]
    if issubclass(guard, LeaseGuard | SuspendGuard):
        where.append("lease_token = %s")
    elif issubclass(guard, UnfinishedGuard):
        states, _ = in_list(ACTIVE_RUN_STATES)
        where.append(f"status IN ({states})")
    if release_lease:
        sets += [f"{c} = NULL" for c in _LEASE_COLUMNS]
    # The lease is extended by the heartbeat thread, not here: lease_expires_at is indexed, and
    # touching it would turn every checkpoint's cheap HOT update of the run row into a full one.
    table = Run._meta.db_table
    return (
        f"UPDATE {table} SET {', '.join(sets)} WHERE {' AND '.join(where)} "
        "RETURNING last_seq, wakeups"
    )
