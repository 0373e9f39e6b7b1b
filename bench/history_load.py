"""`bench history`'s history: finished runs loaded with COPY (not through the runtime), the
partitions they fill, and the WAL a purge of them writes.

Each run has `events` events and a step per two events, all created and finished at one
moment of the past; the runs' ids are of that moment (runtime.core.run_ids), so on a
partitioned database they fill that week's partitions, created first.
"""

from __future__ import annotations

import io
import os
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime

from django.db import DatabaseError, connection, transaction

from bench.wal_share import flushed_lsn, own_wal_bytes
from runtime.core.run_ids import id_at
from runtime.models import Event, Run, Step
from runtime.store.lifecycle.partitions import (
    ensure_partitions,
    is_partitioned,
    partition_sizes,
    period_of,
)

WORKFLOW = "bench.history"
_RUN_COLUMNS = (
    "id, workflow, input, status, result, created_at, started_at, finished_at, updated_at, "
    "last_seq, wakeups, priority, admitted"
)
_STEP_COLUMNS = (
    "id, run_id, position, name, kind, status, attempt, input, result, created_at, started_at, "
    "finished_at"
)
_EVENT_COLUMNS = "run_id, seq, type, step_id, payload, created_at"
_CHUNK = 2000  # runs per COPY buffer


def tables() -> str:
    return ", ".join(m._meta.db_table for m in (Run, Step, Event))


def settle(vacuum: bool = False) -> bool:
    """CHECKPOINT (after VACUUM of the history's tables with `vacuum`), so that the next
    rounds pay neither for the WAL nor for the dead rows that came before them; False where
    the role may not checkpoint (PostgreSQL 15+ asks for superuser or pg_checkpoint)."""
    if vacuum:
        with connection.cursor() as cursor:
            cursor.execute(f"VACUUM {tables()}")
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("CHECKPOINT")
    except DatabaseError:
        return False
    return True


def _lines(
    runs: list[uuid.UUID], events: int, workflow: str, at: str, finished: str
) -> Iterator[tuple[str, str, str]]:
    """The COPY text of each run: its row, its steps, its events."""
    for run_id in runs:
        run = f'{run_id}\t{workflow}\t{{"args": [1]}}\tcompleted\t1\t{at}\t{at}\t{finished}\t'
        run += f"{finished}\t{events}\t0\t0\tt\n"
        steps = "".join(
            f"{os.urandom(16).hex()}\t{run_id}\t{p}\tbench.noop\tstep\tcompleted\t1\t\\N\t{p}\t"
            f"{at}\t{at}\t{at}\n"
            for p in range(1, events // 2 + 1)
        )
        log = "".join(
            f'{run_id}\t{s}\tstep_completed\t\\N\t{{"attempt": 1, "result": {s}}}\t{at}\n'
            for s in range(1, events + 1)
        )
        yield run, steps, log


def load(
    runs: int,
    events: int,
    moment: datetime,
    workflow: str = WORKFLOW,
    finished: datetime | None = None,
) -> float:
    """COPY `runs` finished runs of `workflow` with `events` events each, created at `moment`
    and finished then (or at `finished`); then VACUUM ANALYZE (the visibility map and the
    statistics). Returns the seconds taken."""
    began = time.monotonic()
    if is_partitioned(connection.alias):
        ensure_partitions(connection.alias, [period_of(moment)])
    base = int(moment.timestamp() * 1000)
    ids = [id_at(base + n // 100) for n in range(runs)]
    at = moment.isoformat()
    ended = (finished or moment).isoformat()
    with connection.cursor() as cursor:
        raw = cursor.cursor
        for first in range(0, runs, _CHUNK):
            buffers = [io.StringIO(), io.StringIO(), io.StringIO()]
            for parts in _lines(ids[first : first + _CHUNK], events, workflow, at, ended):
                for buffer, text in zip(buffers, parts, strict=True):
                    buffer.write(text)
            for table, columns, buffer in zip(
                (Run, Step, Event), (_RUN_COLUMNS, _STEP_COLUMNS, _EVENT_COLUMNS), buffers,
                strict=True,
            ):  # fmt: skip
                with raw.copy(f"COPY {table._meta.db_table} ({columns}) FROM STDIN") as copy:
                    copy.write(buffer.getvalue())
        cursor.execute(f"VACUUM ANALYZE {tables()}")
    return time.monotonic() - began


def wal_lsn() -> int:
    """The WAL's current insert position, in bytes."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn")
        return int(cursor.fetchone()[0])


def wal_per_run(runs: int, purge: Callable[[], int]) -> tuple[float | None, float | None]:
    """The WAL bytes per run `purge()` (which returns how many runs it retired) writes,
    right after a CHECKPOINT (every page's first change then logs the whole page): this
    database's own records (None where they cannot be read back, bench.wal_share), and all
    the server wrote meanwhile, whatever other databases did."""
    settle()
    before = wal_lsn()
    retired = purge()
    written, own = wal_lsn() - before, own_wal_bytes(before, flushed_lsn())
    if not retired:
        return None, None
    return (round(own / retired, 1) if own is not None else None), round(written / retired, 1)


def sizes() -> list[dict[str, object]]:
    """The non-empty history partitions: name, estimated rows, MiB with indexes."""
    if not is_partitioned(connection.alias):
        return []
    return [
        {"partition": name, "rows": rows, "mib": round(size / 2**20, 1)}
        for name, rows, size in partition_sizes(connection.alias)
        if rows > 0
    ]
