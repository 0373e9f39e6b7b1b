"""The claim of a run this worker holds warm (runtime.warm): its lease, and the history from
the first position whose record the parked workflow may not have seen final, not all of it.

Records in a finished state never change while the run lives (a fork is a run of its own),
so what the worker kept before that position is what the database holds, whoever ran the run
in between; from there on everything is read again.
"""

from __future__ import annotations

import uuid
from datetime import datetime

import psycopg
from django.db import connection

from runtime.core.history import RecordedStep
from runtime.models import Step
from runtime.store.connection import raw_connection
from runtime.store.dialect import postgres
from runtime.store.runs.run_statements import (
    HISTORY_FIELDS,
    HISTORY_PG,
    RunClaim,
    claim_of,
    claim_run,
    claim_statement,
    claim_with_history_round_trip,
    claims_in_one_round_trip,
    history_of,
)

_TAIL_PG = f"{HISTORY_PG} AND position >= %s"


def claim_run_with_tail(
    run_id: uuid.UUID, token: str, now: datetime, owner: int | None, from_position: int
) -> tuple[RunClaim, list[RecordedStep]] | None:
    """`claim_run`, then the run's records at `from_position` and after (in one round trip on
    PostgreSQL, as `claim_run_with_history`); None if the run was not claimed."""
    if not claims_in_one_round_trip():
        claimed = claim_run(run_id, token, now, owner)
        if claimed is None:
            return None
        return claimed, load_tail(run_id, from_position)
    claimed_rows, rows = claim_with_history_round_trip(
        claim_statement(run_id, token, now, owner), (_TAIL_PG, [run_id, from_position])
    )
    return (claim_of(claimed_rows[0]), list(history_of(rows).values())) if claimed_rows else None


def load_tail(run_id: uuid.UUID, from_position: int) -> list[RecordedStep]:
    """The run's records at `from_position` and after (its lease already held)."""
    if not postgres():
        tail = Step.objects.filter(run_id=run_id, position__gte=from_position)
        return [RecordedStep(*row) for row in tail.values_list(*HISTORY_FIELDS)]
    with connection.wrap_database_errors, psycopg.Cursor(raw_connection()) as cursor:
        cursor.execute(_TAIL_PG, [run_id, from_position], binary=True)
        return list(history_of(cursor.fetchall()).values())
