"""Global rate limits: one bucket row per rate-limited step, in the database.

PostgreSQL, not Redis: it is the one service every deployment has (the broker may be
RabbitMQ, or the in-process memory broker), a reservation commits with the same guarantees as
the history, and one statement per body start is far below what a rate limit allows anyway.

The bucket stores the earliest time the next body may start. A reservation hands out that
time and moves it on by the rate's spacing, under the upsert's row lock, so workers racing
for turns get distinct, evenly spaced times. Reservations are remembered per (step, attempt):
an attempt that suspended until its turn and runs again gets the same time back, not a new one.
"""

from __future__ import annotations

import uuid
from contextlib import nullcontext
from datetime import datetime, timedelta
from typing import Any

from django.db import connection, transaction

from runtime.models import RateBucket, RateReservation, Step, StepStatus
from runtime.store.connection import KeptConnections
from runtime.store.dialect import postgres

# Turns are taken at a body's start, often as a task's first query: on a connection that
# outlives the task (runtime.store.connection.KeptConnections).
_kept = KeptConnections()

_BUCKET = RateBucket._meta.db_table
_RESERVATION = RateReservation._meta.db_table

# One round trip: the earlier reservation of this attempt if there is one, else a new turn.
_RESERVE_PG = (
    f"WITH prior AS (SELECT at FROM {_RESERVATION} WHERE step_id = %s AND attempt = %s), "
    f"turn AS (INSERT INTO {_BUCKET} (name, next_at) "
    "SELECT %s, %s::timestamptz + %s * interval '1 second' WHERE NOT EXISTS (SELECT 1 FROM prior) "
    f"ON CONFLICT (name) DO UPDATE SET next_at = GREATEST({_BUCKET}.next_at, %s::timestamptz) "
    "+ %s * interval '1 second' "
    "RETURNING next_at - %s * interval '1 second' AS at), "
    f"saved AS (INSERT INTO {_RESERVATION} (step_id, attempt, at) "
    "SELECT %s, %s, at FROM turn ON CONFLICT (step_id, attempt) DO NOTHING) "
    "SELECT at FROM prior UNION ALL SELECT at FROM turn"
)


# A new turn for an attempt that keeps one already (it came back too late to take it).
_RETAKE_PG = (
    f"WITH turn AS (INSERT INTO {_BUCKET} (name, next_at) "
    "VALUES (%s, %s::timestamptz + %s * interval '1 second') "
    f"ON CONFLICT (name) DO UPDATE SET next_at = GREATEST({_BUCKET}.next_at, %s::timestamptz) "
    "+ %s * interval '1 second' "
    "RETURNING next_at - %s * interval '1 second' AS at) "
    f"INSERT INTO {_RESERVATION} (step_id, attempt, at) SELECT %s, %s, at FROM turn "
    "ON CONFLICT (step_id, attempt) DO UPDATE SET at = EXCLUDED.at RETURNING at"
)


def retake_turn(
    bucket: str, spacing: float, step_id: uuid.UUID, attempt: int, now: datetime
) -> datetime:
    """A new turn for this attempt, replacing the one it kept (which nobody else takes)."""
    if postgres():
        params: list[Any] = [bucket, now, spacing, now, spacing, spacing, step_id, attempt]
        with _kept.lent(), connection.cursor() as cursor:
            cursor.execute(_RETAKE_PG, params)
            return cursor.fetchone()[0]
    with transaction.atomic():
        RateReservation.objects.filter(step_id=step_id, attempt=attempt).delete()
        return _reserve_portable(bucket, spacing, step_id, attempt, now)


def reserve_turn(
    bucket: str, spacing: float, step_id: uuid.UUID, attempt: int, now: datetime
) -> datetime:
    """The time at which this attempt of this step may start its body."""
    if postgres():
        params: list[Any] = [
            step_id,
            attempt,
            bucket,
            now,
            spacing,
            now,
            spacing,
            spacing,
            step_id,
            attempt,
        ]
        # One statement in autocommit: one round trip, no BEGIN and COMMIT around it.
        with _kept.lent(), connection.cursor() as cursor:
            cursor.execute(_RESERVE_PG, params)
            return cursor.fetchone()[0]
    return _reserve_portable(bucket, spacing, step_id, attempt, now)


def _reserve_portable(
    bucket: str, spacing: float, step_id: uuid.UUID, attempt: int, now: datetime
) -> datetime:
    with transaction.atomic():
        prior = RateReservation.objects.filter(step_id=step_id, attempt=attempt).first()
        if prior is not None:
            return prior.at
        RateBucket.objects.bulk_create(
            [RateBucket(name=bucket, next_at=now)], ignore_conflicts=True
        )
        row = RateBucket.objects.select_for_update().get(name=bucket)
        at = max(row.next_at, now)
        row.next_at = at + timedelta(seconds=spacing)
        row.save(update_fields=["next_at"])
        RateReservation.objects.create(step_id=step_id, attempt=attempt, at=at)
        return at


def forget_reservations(before: datetime) -> int:
    """Delete reservations whose turn came before `before` (their attempts have started)."""
    deleted, _ = RateReservation.objects.filter(at__lt=before).delete()
    return deleted


def hand_back_claim(run_id: uuid.UUID, step_id: uuid.UUID, attempt: int, wake_at: datetime) -> bool:
    """Undo a fan-out branch's claim of `attempt` whose turn is later: the step is pending at
    the previous attempt again, due at `wake_at`; False if the claim was no longer held."""
    with _kept.lent() if postgres() else nullcontext():
        updated = Step.objects.filter(
            run_id=run_id, id=step_id, status=StepStatus.RUNNING, attempt=attempt
        ).update(status=StepStatus.PENDING, attempt=attempt - 1, wake_at=wake_at, lease_owner=None)
    return updated == 1
