"""Stream chunks and run notifications: the statements behind runtime.streaming.

A chunk is appended in its own transaction with the next seq of its (run, stream), and on
PostgreSQL the same transaction sends `NOTIFY fanfold_runs, '<run id>'`, which PostgreSQL
delivers when (and only if) the transaction commits: a woken reader always finds the chunk.
Concurrent writers to one stream (the branches of a fan-out) take a transaction-level
advisory lock on the stream first, so they queue instead of colliding on the seq; the lock,
the insert and the notification go out in one pipeline. Elsewhere (SQLite) the ORM writes
the chunk, and a rare seq collision is retried.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from functools import cache
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import Max

from runtime.core.clock import current_time
from runtime.core.writes import ChunkDraft
from runtime.models import StreamChunk
from runtime.store.dialect import adapter, execute, json_param, postgres
from runtime.store.history.payload_forms import StoredForms

CHANNEL = "fanfold_runs"
_ATTEMPTS = 20  # seq collisions are rare (SQLite, or a lock-free race); each retry is cheap


def append_chunk(
    run_id: uuid.UUID, stream: str, value: Any, writer_key: str | None = None
) -> int | None:
    """Append `value` to the run's stream; returns its seq (None: `writer_key` was written).

    The value is written in its stored form (runtime.store.history.payload_forms)."""
    value = StoredForms().form(value, run_id)
    for _ in range(_ATTEMPTS):
        try:
            with transaction.atomic():
                return _append_txn(run_id, stream, value, writer_key)
        except IntegrityError:
            if writer_key is not None and _written(run_id, stream, writer_key):
                return None
    raise IntegrityError(f"no free seq for stream {stream!r} of run {run_id}")


def _append_txn(run_id: uuid.UUID, stream: str, value: Any, writer_key: str | None) -> int | None:
    if postgres():
        return _append_pg(run_id, stream, value, writer_key)
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
        created_at=current_time(),
    )
    return seq


_TABLE = StreamChunk._meta.db_table
_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))"
# The next seq is read under the lock by a statement of its own, so its snapshot (READ
# COMMITTED: one per statement) sees every chunk committed before the lock was granted.
_INSERT_NEXT = (
    f"INSERT INTO {_TABLE} (run_id, stream, seq, value, writer_key, created_at) "
    f"SELECT %s, %s, COALESCE(MAX(seq), 0) + 1, %s::jsonb, %s, %s FROM {_TABLE} "
    "WHERE run_id = %s AND stream = %s "
    "ON CONFLICT DO NOTHING RETURNING seq"
)
_NOTIFY = "SELECT pg_notify(%s, %s)"


def _append_pg(run_id: uuid.UUID, stream: str, value: Any, writer_key: str | None) -> int | None:
    """Lock, insert and notify in one pipeline (one round trip before the commit)."""
    insert = [run_id, stream, json_param(value), writer_key, current_time(), run_id, stream]
    _, inserted, _ = execute(
        [(_LOCK, [f"{run_id}/{stream}"]), (_INSERT_NEXT, insert), (_NOTIFY, [CHANNEL, str(run_id)])]
    )
    # Nothing inserted: under the lock the seq was free, so the writer key was taken.
    return int(inserted[0][0]) if inserted else None


@cache
def _insert_many_sql(rows: int) -> str:
    values = ", ".join(["(%s::integer, %s::jsonb)"] * rows)
    return (
        f"INSERT INTO {_TABLE} (run_id, stream, seq, value, writer_key, created_at) "
        "SELECT %s::uuid, %s::text, last.seq + v.n, v.value, NULL, %s::timestamptz "
        f"FROM (SELECT COALESCE(MAX(seq), 0) AS seq FROM {_TABLE} "
        "WHERE run_id = %s::uuid AND stream = %s::text) AS last, "
        f"(VALUES {values}) AS v(n, value)"
    )


def chunk_statements(
    run_id: uuid.UUID, chunks: Sequence[ChunkDraft], now: datetime
) -> list[tuple[str, list[Any]]]:
    """The PostgreSQL statements that append `chunks` (values in stored form) to the run's
    streams inside the caller's transaction, and notify the run's readers:
    per stream, in name order, its lock, then one insert of its chunks in order; then one
    NOTIFY, which leaves at commit."""
    as_json = adapter("json")
    statements: list[tuple[str, list[Any]]] = []
    for stream, values in _by_stream(chunks).items():
        params: list[Any] = [run_id, stream, now, run_id, stream]
        for n, value in enumerate(values, 1):
            params.extend((n, as_json(value)))
        statements.append((_LOCK, [f"{run_id}/{stream}"]))
        statements.append((_insert_many_sql(len(values)), params))
    statements.append(notify_statement(run_id))
    return statements


def notify_statement(run_id: uuid.UUID) -> tuple[str, list[Any]]:
    """The statement that tells every listening process something happened to the run: in a
    transaction, it leaves at commit."""
    return _NOTIFY, [CHANNEL, str(run_id)]


def append_chunks_txn(run_id: uuid.UUID, chunks: Sequence[ChunkDraft], now: datetime) -> None:
    """Append `chunks` (values in stored form) inside the caller's transaction, on any
    database: the portable side of `chunk_statements`."""
    if postgres():
        execute(chunk_statements(run_id, chunks, now))
        return
    rows: list[StreamChunk] = []
    for stream, values in _by_stream(chunks).items():
        last = StreamChunk.objects.filter(run_id=run_id, stream=stream).aggregate(m=Max("seq"))
        rows.extend(
            StreamChunk(run_id=run_id, stream=stream, seq=(last["m"] or 0) + n, value=value,
                        created_at=now)
            for n, value in enumerate(values, 1)
        )  # fmt: skip
    StreamChunk.objects.bulk_create(rows)


def _by_stream(chunks: Sequence[ChunkDraft]) -> dict[str, list[Any]]:
    by_stream: dict[str, list[Any]] = {}
    for chunk in sorted(chunks, key=lambda c: c.stream):  # stable: each stream's order kept
        by_stream.setdefault(chunk.stream, []).append(chunk.value)
    return by_stream


def _written(run_id: uuid.UUID, stream: str, writer_key: str) -> bool:
    return StreamChunk.objects.filter(run_id=run_id, stream=stream, writer_key=writer_key).exists()


def notify_run(run_id: uuid.UUID) -> None:
    """Tell every listening process that something happened to the run (PostgreSQL only).

    Inside a transaction the notification leaves at commit; outside, at once.
    """
    if not postgres():
        return
    with connection.cursor() as cursor:
        cursor.execute(_NOTIFY, [CHANNEL, str(run_id)])
