"""The SQL of fan-in: the statements that record a batch of branch reports.

Each builder returns one `(sql, params)` in the portable form of runtime.store.dialect.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from runtime.core.branches import BranchReport
from runtime.core.fanin import CANCELLED_ERROR
from runtime.core.states import EventType
from runtime.core.writes import EventDraft
from runtime.models import ACTIVE_RUN_STATES, Event, FanoutGroup, Run, Step, StepStatus
from runtime.store.dialect import (
    MAX_PARAMS,
    Statement,
    cast,
    chunks,
    in_list,
    json_param,
    postgres,
    run_ids_in,
    time_param,
    uuid_param,
    values_cte,
)
from runtime.store.history.payload_forms import StoredForms, report_event, report_value

OUTCOME_STATUS = {
    "completed": StepStatus.COMPLETED,
    "failed": StepStatus.FAILED,
    "retrying": StepStatus.PENDING,
}
OUTCOME_EVENT = {
    "completed": "step_completed",
    "failed": "step_failed",
    "retrying": "step_retrying",
}


def lock_statement(run_id: uuid.UUID, now: datetime) -> Statement:
    """Take the run's row lock; no row if the run is no longer active (its reports are stale).

    On PostgreSQL a locking read: the second round's seq update writes the run row (and its
    `updated_at`) once, where an UPDATE here made two row versions per report.
    """
    states, active = in_list(ACTIVE_RUN_STATES)
    where = f"WHERE id = {cast('%s', 'uuid')} AND status IN ({states})"
    if postgres():
        return (
            f"SELECT id FROM {Run._meta.db_table} {where} FOR NO KEY UPDATE",
            [uuid_param(run_id), *active],
        )
    return (
        f"UPDATE {Run._meta.db_table} SET updated_at = %s {where} RETURNING id",
        [time_param(now), uuid_param(run_id), *active],
    )


STEP_COLUMNS = [
    "v_id", "v_attempt", "v_status", "v_result", "v_error", "v_finished", "v_wake", "v_expired"
]  # fmt: skip


def step_rows(reports: list[BranchReport]) -> list[tuple[Any, ...]]:
    """The `v` rows (STEP_COLUMNS) of `step_update`, in one lock order for every writer;
    results and errors in their stored forms (runtime.store.history.payload_forms)."""
    forms = StoredForms()
    return [
        (
            uuid_param(r.step_id),
            r.attempt,
            OUTCOME_STATUS[r.outcome].value,
            json_param(report_value(r.result if r.outcome == "completed" else None, r, forms)),
            json_param(report_value(r.error, r, forms)),
            time_param(r.finished_at if r.outcome != "retrying" else None),
            time_param(r.wake_at if r.outcome == "retrying" else None),
            time_param(r.lease_expired_by),
        )
        for r in sorted(reports, key=lambda r: r.step_id.hex)
    ]


def step_update(run_ids: Iterable[uuid.UUID]) -> Statement:
    """UPDATE every step of the `v` rows (steps of `run_ids`) that still runs its attempt (in
    an active run), RETURNING id, attempt; its parameters follow those of `v`."""
    step_table, run_table = Step._meta.db_table, Run._meta.db_table
    states, active = in_list(ACTIVE_RUN_STATES)
    runs, run_params = run_ids_in(step_table, run_ids)
    sql = (
        f"UPDATE {step_table} SET status = v_status, "
        f"result = {cast('v_result', 'jsonb')}, error = {cast('v_error', 'jsonb')}, "
        f"finished_at = {cast('v_finished', 'timestamptz')}, "
        f"wake_at = {cast('v_wake', 'timestamptz')} "
        f"FROM v WHERE id = {cast('v_id', 'uuid')} AND attempt = {cast('v_attempt', 'integer')}"
        f" AND status = %s AND ({cast('v_expired', 'timestamptz')} IS NULL"
        f" OR wake_at < {cast('v_expired', 'timestamptz')}) AND {runs}"
        f" AND EXISTS (SELECT 1 FROM {run_table} r "
        f"WHERE r.id = {step_table}.run_id AND r.status IN ({states})) RETURNING id, attempt"
    )
    return sql, [StepStatus.RUNNING.value, *run_params, *active]


def step_statements(reports: list[BranchReport]) -> list[Statement]:
    """Write every report whose step still runs its attempt (in an active run)."""
    update, update_params = step_update({r.run_id for r in reports})
    statements: list[Statement] = []
    for part in chunks(step_rows(reports), len(STEP_COLUMNS)):
        cte, params = values_cte("v", STEP_COLUMNS, part)
        statements.append((cte + update, [*params, *update_params]))
    return statements


def count_statement(
    run_id: uuid.UUID, group_id: uuid.UUID, succeeded: int, failed: int
) -> Statement:
    """Add a batch's finished branches to the group's counters, unless it has settled."""
    return (
        f"UPDATE {FanoutGroup._meta.db_table} SET succeeded = succeeded + %s, "
        f"failed = failed + %s WHERE id = {cast('%s', 'uuid')} "
        f"AND run_id = {cast('%s', 'uuid')} AND verdict IS NULL "
        "RETURNING total, released, succeeded, failed, need, failure_limit, first_position",
        [succeeded, failed, uuid_param(group_id), uuid_param(run_id)],
    )


def cancel_statement(
    run_id: uuid.UUID, span: tuple[int, int] | None, late: list[uuid.UUID], now: datetime
) -> Statement:
    """Cancel the unfinished branches in `span` (a settle) and the `late` reports' steps."""
    conditions: list[str] = []
    params: list[Any] = []
    if span is not None:
        conditions.append("(position >= %s AND position < %s AND status IN (%s, %s))")
        params += [*span, StepStatus.PENDING.value, StepStatus.RUNNING.value]
    if late:
        ids = ", ".join([cast("%s", "uuid")] * len(late))
        conditions.append(f"id IN ({ids})")
        params += [uuid_param(sid) for sid in late]
    return (
        f"UPDATE {Step._meta.db_table} SET status = %s, result = NULL, "
        f"error = {cast('%s', 'jsonb')}, finished_at = %s, wake_at = NULL "
        f"WHERE run_id = {cast('%s', 'uuid')} AND ({' OR '.join(conditions)})",
        [
            StepStatus.CANCELLED.value,
            json_param(StoredForms().form(CANCELLED_ERROR, run_id, 256)),
            time_param(now),
            uuid_param(run_id),
            *params,
        ],
    )


def _seq_sets(count: int, wake: bool, now: datetime) -> tuple[str, list[Any]]:
    sets = ["last_seq = last_seq + %s", "updated_at = %s"]
    params: list[Any] = [count, time_param(now)]
    if wake:
        # wake_at = now: if the enqueue after commit is lost, the recovery sweep runs it.
        sets += ["wakeups = wakeups + 1", "wake_at = %s"]
        params.append(time_param(now))
    return ", ".join(sets), params


def seq_statement(run_id: uuid.UUID, count: int, wake: bool, now: datetime) -> Statement:
    """Take `count` event seqs under the run's row lock; a wake also makes the run due now."""
    sets, params = _seq_sets(count, wake, now)
    return (
        f"UPDATE {Run._meta.db_table} SET {sets} WHERE id = {cast('%s', 'uuid')}",
        [*params, uuid_param(run_id)],
    )


EVENT_COLUMNS = ["e_run", "e_back", "e_type", "e_step", "e_payload", "e_at"]


def report_events(report: BranchReport) -> list[EventDraft]:
    """The two events of a recorded report: its attempt's start and its outcome (its payload
    in stored form)."""
    outcome = EventDraft(
        OUTCOME_EVENT[report.outcome], report.finished_at, report.step_id, event_payload(report)
    )
    return [
        EventDraft(
            EventType.STEP_STARTED, report.started_at, report.step_id, {"attempt": report.attempt}
        ),
        report_event(outcome, report, StoredForms()),
    ]


def event_rows(run_id: uuid.UUID, drafts: list[EventDraft]) -> list[tuple[Any, ...]]:
    """The `e` rows (EVENT_COLUMNS) of a run's drafts: the last one takes the new last_seq."""
    return [
        (uuid_param(run_id), back, draft.type, uuid_param(draft.step_id),
         json_param(draft.payload), time_param(draft.at))
        for back, draft in enumerate(reversed(drafts))
    ]  # fmt: skip


def event_insert(seqs_from: str) -> str:
    """INSERT ... SELECT of the `e` rows, each seq counted back from `r.last_seq`."""
    return (
        f"INSERT INTO {Event._meta.db_table} (run_id, seq, type, step_id, payload, created_at) "
        f"SELECT r.id, r.last_seq - {cast('e_back', 'integer')}, e_type, "
        f"{cast('e_step', 'uuid')}, {cast('e_payload', 'jsonb')}, {cast('e_at', 'timestamptz')} "
        f"FROM e JOIN {seqs_from} r ON r.id = {cast('e_run', 'uuid')}"
    )


def event_statements(rows: list[tuple[Any, ...]]) -> list[Statement]:
    """Insert (run, back, type, step, payload, at) rows; seq = the run's new last_seq - back."""
    statements: list[Statement] = []
    for part in chunks(rows, len(EVENT_COLUMNS)):
        cte, params = values_cte("e", EVENT_COLUMNS, part)
        statements.append((cte + event_insert(Run._meta.db_table), params))
    return statements


def seq_and_events_statement(
    run_id: uuid.UUID, wake: bool, now: datetime, rows: list[tuple[Any, ...]]
) -> Statement | None:
    """`seq_statement` and `event_statements` of one run's `rows` as one statement, on
    PostgreSQL (a data-modifying CTE; SQLite has none); None where that cannot be (no rows, or
    more than one statement may bind)."""
    if not rows or not postgres() or len(rows) * len(EVENT_COLUMNS) > MAX_PARAMS:
        return None
    cte, params = values_cte("e", EVENT_COLUMNS, rows)
    seqs, seq_params = seqs_cte(run_id, len(rows), wake, now)
    return f"{cte.rstrip()}, {seqs} {event_insert('s')}", [*params, *seq_params]


def seqs_cte(
    run_id: uuid.UUID, count: int, wake: bool, now: datetime, gate: str = "TRUE"
) -> Statement:
    """`s AS (...)`: `seq_statement` as a CTE that returns the run's id and new last_seq, for
    `event_insert("s")` (PostgreSQL); it takes no seqs unless the SQL condition `gate` holds."""
    sets, params = _seq_sets(count, wake, now)
    where = f"WHERE id = %s AND {gate}"
    return (
        f"s AS (UPDATE {Run._meta.db_table} SET {sets} {where} RETURNING id, last_seq)",
        [*params, uuid_param(run_id)],
    )


def event_payload(report: BranchReport) -> dict[str, Any]:
    payload: dict[str, Any] = {"attempt": report.attempt}
    if report.outcome == "completed":
        payload["result"] = report.result
    else:
        payload["error"] = report.error
    if report.outcome == "failed":
        payload["reason"] = report.reason
    if report.outcome == "retrying" and report.wake_at is not None:
        payload["delay"] = max((report.wake_at - report.finished_at).total_seconds(), 0.0)
        payload["wake_at"] = report.wake_at.isoformat()
    return payload


def release_statement(run_id: uuid.UUID, start: int, stop: int, now: datetime) -> Statement:
    """Mark the branches at positions [start, stop) dispatched now."""
    # A released branch's wake_at is its dispatch time: the sweep republishes it if its
    # message never arrives.
    return (
        f"UPDATE {Step._meta.db_table} SET wake_at = %s WHERE run_id = %s "
        "AND position >= %s AND position < %s AND status = %s",
        [time_param(now), uuid_param(run_id), start, stop, StepStatus.PENDING.value],
    )


def group_update_statement(
    run_id: uuid.UUID, group_id: uuid.UUID, sets: list[str], params: list[Any]
) -> Statement:
    table = FanoutGroup._meta.db_table
    return (
        f"UPDATE {table} SET {', '.join(sets)} WHERE id = {cast('%s', 'uuid')} "
        f"AND run_id = {cast('%s', 'uuid')}",
        [*params, uuid_param(group_id), uuid_param(run_id)],
    )
