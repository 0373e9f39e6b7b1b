"""The run table's statements: the run lease claim and the history load of an execution
(the guarded UPDATE every checkpoint batch starts with is runtime.store.runs.run_updates)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import psycopg
from django.db import connection

from runtime import conf
from runtime.core.history import RecordedStep
from runtime.core.identity import DEBOUNCE_KEY_PREFIX
from runtime.core.versions import UNPINNED
from runtime.models import ACTIVE_RUN_STATES, Run, RunStatus, Step
from runtime.payloads.codec import STORED_FORM_MARK
from runtime.payloads.packing import unpack
from runtime.registry import versions
from runtime.store.connection import raw_connection
from runtime.store.dialect import IDLE, Statement, in_list, postgres, uuid_param
from runtime.store.history.columns import JSON_COLUMNS
from runtime.store.raw_statements import StatementCursor


@dataclass(frozen=True)
class RunClaim:
    """What an execution needs of the run whose lease it took."""

    status: str
    wakeups: int
    workflow: str
    input: dict[str, Any]
    priority: int = 0
    app_version: str = ""


def claim_run(
    run_id: uuid.UUID, token: str, now: datetime, owner: int | None = None
) -> RunClaim | None:
    """Take the run's lease if it is active, admitted (runtime.flow.admission) and nobody live
    holds it; `owner` is the claiming process's liveness key (runtime.leases.liveness)."""
    with connection.cursor() as cursor:
        cursor.execute(*claim_statement(run_id, token, now, owner))
        row = cursor.fetchone()
    return None if row is None else claim_of(row)


def claim_run_with_history(
    run_id: uuid.UUID, token: str, now: datetime, owner: int | None = None
) -> tuple[RunClaim, dict[int, RecordedStep]] | None:
    """`claim_run`, then the run's history (`load_history`) if it was claimed.

    On PostgreSQL outside an atomic block both go in one round trip, the claim committed
    without waiting for the WAL flush: a claim lost with the server only makes the run
    claimable again (every later write is fenced by the lease, and the first durable commit
    flushes the claim with it), while what the run records stays as durable as before.
    """
    if not claims_in_one_round_trip():
        claimed = claim_run(run_id, token, now, owner)
        return None if claimed is None else (claimed, load_history(run_id))
    # Prepared: the same two texts every time, parsed and planned once.
    claimed_rows, rows = claim_with_history_round_trip(
        claim_statement(run_id, token, now, owner), (HISTORY_PG, [run_id])
    )
    return (claim_of(claimed_rows[0]), history_of(rows)) if claimed_rows else None


def claims_in_one_round_trip() -> bool:
    """Whether a claim and its history read may go as one pipelined transaction: on
    PostgreSQL, in autocommit, outside an atomic block (whose transaction it would commit)."""
    return postgres() and not connection.in_atomic_block and connection.get_autocommit()


def claim_with_history_round_trip(
    claim: Statement, history: Statement
) -> tuple[list[Any], list[Any]]:
    """Run `claim` and `history` in one pipelined transaction, committed without waiting for
    the WAL flush, both prepared (where the connection prepares); their rows."""
    raw = raw_connection()
    with (
        connection.wrap_database_errors,
        StatementCursor(raw) as frame,
        StatementCursor(raw) as claiming,
        StatementCursor(raw) as reading,
    ):
        try:
            with raw.pipeline():
                frame.execute("BEGIN")
                frame.execute("SET LOCAL synchronous_commit = off")
                claiming.execute(*claim, prepare=True)
                reading.execute(*history, binary=True, prepare=True)
                frame.execute("COMMIT")
        except psycopg.Error:
            if not raw.closed and raw.info.transaction_status != IDLE:
                raw.execute("ROLLBACK")
            raise
        return claiming.fetchall(), reading.fetchall()


def claim_statement(
    run_id: uuid.UUID, token: str, now: datetime, owner: int | None
) -> tuple[str, list[Any]]:
    """The claim of one run: `UPDATE ... RETURNING` its `RunClaim` columns if it was taken."""
    lease_until = now + timedelta(seconds=conf.get().LEASE_SECONDS)
    claimable, params = claimable_condition("", now)
    sql = (
        f"UPDATE {Run._meta.db_table} SET lease_token = %s, lease_expires_at = %s, "
        f"lease_owner = %s WHERE id = %s AND {claimable} "
        "RETURNING status, wakeups, workflow, input, priority, app_version"
    )
    return sql, [token, lease_until, owner, uuid_param(run_id), *params]


def claimable_condition(alias: str, now: datetime) -> tuple[str, list[Any]]:
    """The condition on a run row (`alias.` before its columns) that a claim may take it: it is
    active, admitted (runtime.flow.admission), of a version this process serves
    (runtime.versions: a message that reached the wrong worker claims nothing) and nobody
    live holds its lease."""
    states, state_params = in_list(ACTIVE_RUN_STATES)
    served, served_params = in_list((UNPINNED, *versions.served()))
    a = alias
    sql = (
        f"{a}status IN ({states}) AND {a}app_version IN ({served}) "
        f"AND ({a}lease_token IS NULL OR {a}lease_expires_at < %s) "
        f"AND {a}admitted = %s "
        # A debounced run (runtime.messaging.debounce) starts no earlier than it is due.
        f"AND ({a}status <> %s OR {a}wake_at IS NULL OR {a}wake_at <= %s "
        f"OR {a}idempotency_key IS NULL OR {a}idempotency_key NOT LIKE %s)"
    )
    debounced = [str(RunStatus.PENDING.value), now, f"{DEBOUNCE_KEY_PREFIX}%"]
    return sql, [*state_params, *served_params, now, True, *debounced]


def claim_of(row: Sequence[Any]) -> RunClaim:
    """The `RunClaim` of a claim statement's returned row."""
    raw_input = unpack(json.loads(row[3]) if isinstance(row[3], str) else row[3])
    return RunClaim(
        status=row[0],
        wakeups=int(row[1]),
        workflow=row[2],
        input=raw_input,
        priority=row[4],
        app_version=row[5],
    )


def run_priorities(run_ids: Sequence[uuid.UUID]) -> list[tuple[uuid.UUID, int]]:
    """(id, priority) of these runs, highest priority first (then in the order given), for
    the paths that enqueue runs they know only by id."""
    found = dict(Run.objects.filter(id__in=list(run_ids)).values_list("id", "priority"))
    order = {run_id: index for index, run_id in enumerate(run_ids)}
    return sorted(found.items(), key=lambda item: (-item[1], order[item[0]]))


HISTORY_FIELDS = (
    "position",
    "name",
    "kind",
    "status",
    "attempt",
    "result",
    "error",
    "wake_at",
    "started_at",
    "callback_token",
)


# The JSON columns come as text, so that all of a history's values are decoded by one
# `json.loads` (per-row decoding cost a 100,000-branch fan-out's last pass 0.6 s).
HISTORY_PG = (
    f"SELECT {', '.join(f'{f}::text' if f in JSON_COLUMNS else f for f in HISTORY_FIELDS)} "
    f"FROM {Step._meta.db_table} WHERE run_id = %s"
)
_RESULT, _ERROR = HISTORY_FIELDS.index("result"), HISTORY_FIELDS.index("error")


def load_history(run_id: uuid.UUID) -> dict[int, RecordedStep]:
    """The run's step records by position, as replay reads them.

    On PostgreSQL one client-side query in binary format, its rows made by psycopg at once: a
    100,000-branch fan-out's last pass spent more than a second in the ORM's per-value
    converters and a server-side cursor's fetches.
    """
    if not postgres():
        values = Step.objects.filter(run_id=run_id).values_list(*HISTORY_FIELDS)
        return {row[0]: RecordedStep(*row) for row in values.iterator(chunk_size=5000)}
    with connection.wrap_database_errors, psycopg.Cursor(raw_connection()) as cursor:
        cursor.execute(HISTORY_PG, [run_id], binary=True)
        return history_of(cursor.fetchall())


def history_of(rows: list[Any]) -> dict[int, RecordedStep]:
    """The rows of `HISTORY_PG` as step records by position."""
    results = _json_values([row[_RESULT] for row in rows])
    errors = _json_values([row[_ERROR] for row in rows])
    return {
        p: RecordedStep(p, name, kind, status, attempt, result, error, wake_at, started, token)
        for (p, name, kind, status, attempt, _, _, wake_at, started, token), result, error in zip(
            rows, results, errors, strict=True
        )
    }


def _json_values(texts: list[str | None]) -> list[Any]:
    """JSON texts (None: SQL NULL) decoded, all in one `json.loads`."""
    if all(text is None for text in texts):
        return texts
    joined = f"[{','.join('null' if t is None else t for t in texts)}]"
    values: list[Any] = json.loads(joined)
    if STORED_FORM_MARK in joined:  # only then may a value be in a stored form of its own
        return [unpack(value) for value in values]
    return values


def load_histories(run_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, dict[int, RecordedStep]]:
    """The step records of several runs in one query (the replay check of many runs)."""
    histories: dict[uuid.UUID, dict[int, RecordedStep]] = {rid: {} for rid in run_ids}
    rows = Step.objects.filter(run_id__in=list(run_ids)).values_list("run_id", *HISTORY_FIELDS)
    for row in rows.iterator(chunk_size=5000):
        histories[row[0]][row[1]] = RecordedStep(*row[1:])
    return histories
