"""Stream chunks and run notifications: the statements behind runtime.streaming.

A chunk is appended in its own transaction with the next seq of its (run, stream), and on
PostgreSQL the same transaction sends `NOTIFY fanfold_runs, '<run id>'`, which PostgreSQL
delivers when (and only if) the transaction commits: a woken reader always finds the chunk.
Concurrent writers to one stream (the branches of a fan-out) take a transaction-level
advisory lock on the stream first, so they queue instead of colliding on the seq.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import Max
from django.utils import timezone

from runtime.stream_models import StreamChunk

CHANNEL = "fanfold_runs"
_ATTEMPTS = 20  # seq collisions are rare (SQLite, or a lock-free race); each retry is cheap


def _postgres() -> bool:
    return connection.vendor == "postgresql"


def append_chunk(
    run_id: uuid.UUID, stream: str, value: Any, writer_key: str | None = None
) -> int | None:
    """Append `value` to the run's stream; returns its seq (None: `writer_key` was written)."""
    for _ in range(_ATTEMPTS):
        try:
            with transaction.atomic():
                return _append_txn(run_id, stream, value, writer_key)
        except IntegrityError:
            if writer_key is not None and _written(run_id, stream, writer_key):
                return None
    raise IntegrityError(f"no free seq for stream {stream!r} of run {run_id}")


def _append_txn(run_id: uuid.UUID, stream: str, value: Any, writer_key: str | None) -> int | None:
    if _postgres():
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [f"{run_id}/{stream}"]
            )
    if writer_key is not None and _written(run_id, stream, writer_key):
        return None
    chunks = StreamChunk.objects.filter(run_id=run_id, stream=stream)
    seq = (chunks.aggregate(last=Max("seq"))["last"] or 0) + 1
    StreamChunk.objects.create(
        run_id=run_id,
        stream=stream,
        seq=seq,
        value=value,
        writer_key=writer_key,
        created_at=timezone.now(),
    )
    notify_run(run_id)
    return seq


def _written(run_id: uuid.UUID, stream: str, writer_key: str) -> bool:
    return StreamChunk.objects.filter(run_id=run_id, stream=stream, writer_key=writer_key).exists()


def notify_run(run_id: uuid.UUID) -> None:
    """Tell every listening process that something happened to the run (PostgreSQL only).

    Inside a transaction the notification leaves at commit; outside, at once.
    """
    if not _postgres():
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_notify(%s, %s)", [CHANNEL, str(run_id)])
