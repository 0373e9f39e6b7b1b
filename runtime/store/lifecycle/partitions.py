"""The history's partitions on PostgreSQL: which exist, creating them ahead, emptying and
dropping them (docs/design/history.md).

Every per-run table (steps, events, fan-out groups, stream chunks, messages, values, signal
waits) is partitioned by range of `run_id`, one partition per week of run creation (run ids
are time-ordered, runtime.core.run_ids), named `<table>_h<YYYYMMDD>` after the week's Monday,
plus a DEFAULT partition `<table>_rest` for every other id (runs from before partitioning,
and any run whose week has no partition yet), so an insert never fails for a missing one.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db import DatabaseError, connections, models, transaction
from django.db.backends.base.base import BaseDatabaseWrapper

from runtime.core.run_ids import PERIOD, lower_bound, period_start
from runtime.models import (
    Event,
    FanoutGroup,
    Message,
    Run,
    RunValue,
    SignalWait,
    Step,
    StreamChunk,
)

# Partitioned together: a week's partitions are created, emptied and dropped as one.
PARTITIONED: tuple[type[models.Model], ...] = (
    Step,
    Event,
    FanoutGroup,
    StreamChunk,
    Message,
    RunValue,
    SignalWait,
)
REST_SUFFIX = "_rest"
AHEAD = 4  # weeks of partitions kept created ahead of the current one
# How long DDL waits for a lock before giving up (the next retention pass tries again):
# while it waits, the statements queued behind it wait too.
LOCK_TIMEOUT = "200ms"


@dataclass(frozen=True)
class Period:
    """One week of run creation: its runs' ids lie in [low, high)."""

    start: datetime

    @property
    def end(self) -> datetime:
        return self.start + PERIOD

    @property
    def low(self) -> uuid.UUID:
        return lower_bound(self.start)

    @property
    def high(self) -> uuid.UUID:
        return lower_bound(self.end)

    def table(self, model: type[models.Model]) -> str:
        return f"{model._meta.db_table}_h{self.start:%Y%m%d}"


def period_of(moment: datetime) -> Period:
    return Period(period_start(moment))


def is_partitioned(alias: str) -> bool:
    """Whether this database keeps the history in partitions (PostgreSQL, once migrated)."""
    connection = connections[alias]
    if connection.vendor != "postgresql":
        return False
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relkind FROM pg_class WHERE oid = to_regclass(%s)", [Step._meta.db_table]
        )
        row = cursor.fetchone()
    return bool(row and row[0] == "p")


def periods(alias: str) -> list[Period]:
    """The weeks that have partitions, oldest first (read from the step table's)."""
    pattern = re.compile(re.escape(Step._meta.db_table) + r"_h(\d{8})$")
    with connections[alias].cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = to_regclass(%s)",
            [Step._meta.db_table],
        )
        names = [row[0] for row in cursor.fetchall()]
    found = [pattern.match(name) for name in names]
    starts = [datetime.strptime(m.group(1), "%Y%m%d").replace(tzinfo=UTC) for m in found if m]
    return [Period(start) for start in sorted(starts)]


def upcoming(now: datetime, ahead: int = AHEAD) -> Iterator[Period]:
    """The current week and the `ahead` weeks after it."""
    current = period_of(now)
    for n in range(ahead + 1):
        yield Period(current.start + n * PERIOD)


def ensure_partitions(alias: str, wanted: Sequence[Period]) -> list[Period]:
    """Create the partitions of the weeks in `wanted` that have none; returns those created.
    A week whose lock is not granted in time is left for the next call."""
    have = {p.start for p in periods(alias)}
    created = []
    for period in wanted:
        if period.start not in have and _try(alias, create_partitions, period):
            created.append(period)
    return created


def _try(alias: str, ddl: object, period: Period) -> bool:
    try:
        with transaction.atomic(using=alias):
            ddl(connections[alias], period)  # type: ignore[operator]
    except DatabaseError:  # lock_timeout: busy now, the next pass tries again
        return False
    return True


def create_partitions(connection: BaseDatabaseWrapper, period: Period) -> None:
    """Create a week's partitions (in the caller's transaction). Rows of that week that the
    DEFAULT partition holds (a run restored before its week had partitions) move into them."""
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
        for model in PARTITIONED:
            table, name = model._meta.db_table, period.table(model)
            rest = quote(table + REST_SUFFIX)
            bounds = f"run_id >= '{period.low}' AND run_id < '{period.high}'"
            cursor.execute(f"SELECT EXISTS (SELECT 1 FROM {rest} WHERE {bounds})")
            strays = cursor.fetchone()[0]
            if strays:
                cursor.execute(
                    f"CREATE TEMP TABLE fanfold_strays ON COMMIT DROP AS WITH moved AS "
                    f"(DELETE FROM {rest} WHERE {bounds} RETURNING *) SELECT * FROM moved"
                )
            cursor.execute(
                f"CREATE TABLE {quote(name)} PARTITION OF {quote(table)} "
                f"FOR VALUES FROM ('{period.low}') TO ('{period.high}')"
            )
            if strays:
                cursor.execute(f"INSERT INTO {quote(table)} SELECT * FROM fanfold_strays")
                cursor.execute("DROP TABLE fanfold_strays")


def drop_partitions(alias: str, period: Period) -> bool:
    """Drop a week's partitions (detached and dropped by DROP TABLE: its lock on the parent
    is brief); False if the lock was not granted in time (nothing dropped)."""
    return _try(alias, _drop, period)


def _drop(connection: BaseDatabaseWrapper, period: Period) -> None:
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
        for model in PARTITIONED:
            cursor.execute(f"DROP TABLE IF EXISTS {quote(period.table(model))}")


def runs_of(period: Period) -> Any:
    """The runs created in a week (a RunQuerySet, not yet run)."""
    return Run.objects.filter(id__gte=period.low, id__lt=period.high)


def retire_week(alias: str, period: Period) -> tuple[dict[str, int], int] | None:
    """Empty a week's partitions but for the rows of its runs still in the run table, in a
    transaction of its own; returns the rows removed by model label and how many runs were
    kept, or None when the locks were not granted in time (nothing done)."""
    totals = _row_counts(alias, period)  # before the locks: counting a big week takes time
    try:
        with transaction.atomic(using=alias):
            kept_rows, kept_runs = empty_partitions(alias, period)
    except DatabaseError:  # lock_timeout: the next pass empties it
        return None
    removed = {label: n - kept_rows.get(label, 0) for label, n in totals.items()}
    return {label: n for label, n in removed.items() if n > 0}, kept_runs


# Partitions with more rows than this (by the planner's statistics) are not counted exactly.
_COUNTED = 100_000


def _row_counts(alias: str, period: Period) -> dict[str, int]:
    """Each of a week's partitions' rows by model label: counted, or the statistics' estimate
    for a partition above _COUNTED rows (its count would read it whole beside live work)."""
    counts: dict[str, int] = {}
    with connections[alias].cursor() as cursor:
        for model in PARTITIONED:
            name = period.table(model)
            cursor.execute("SELECT reltuples FROM pg_class WHERE oid = to_regclass(%s)", [name])
            row = cursor.fetchone()
            if row is None:
                continue
            if row[0] < _COUNTED:
                cursor.execute(f"SELECT count(*) FROM {connections[alias].ops.quote_name(name)}")
                row = cursor.fetchone()
            counts[model._meta.label] = int(row[0])
    return counts


def empty_partitions(alias: str, period: Period) -> tuple[dict[str, int], int]:
    """Empty a week's partitions but for the rows of the runs of that week still in the run
    table (in the caller's transaction); returns the rows kept by model label and how many
    runs were kept.

    TRUNCATE writes next to nothing to the WAL, where deleting rows logs every page they were
    on. The partitions are locked first (ACCESS EXCLUSIVE: only statements that read this
    week's partitions wait), so no row of a kept run is written between its copy and the
    TRUNCATE; the kept rows (a few long-lived or long-retained runs) are copied back.
    """
    connection = connections[alias]
    quote = connection.ops.quote_name
    kept: dict[str, int] = {}
    with connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
        for model in PARTITIONED:
            cursor.execute(f"LOCK TABLE {quote(period.table(model))} IN ACCESS EXCLUSIVE MODE")
        # Read under the locks: a run restored meanwhile has its rows written after them.
        keep = list(runs_of(period).using(alias).values_list("id", flat=True))
        for model in PARTITIONED:
            name = quote(period.table(model))
            if keep:
                cursor.execute(
                    f"CREATE TEMP TABLE fanfold_kept ON COMMIT DROP AS "
                    f"SELECT * FROM {name} WHERE run_id = ANY(%s)",
                    [keep],
                )
                kept[model._meta.label] = cursor.rowcount
            cursor.execute(f"TRUNCATE {name}")
            if keep:
                cursor.execute(f"INSERT INTO {name} SELECT * FROM fanfold_kept")
                cursor.execute("DROP TABLE fanfold_kept")
    return kept, len(keep)


def partition_sizes(alias: str) -> list[tuple[str, int, int]]:
    """Every history partition's (name, estimated rows, bytes with its indexes)."""
    tables = [m._meta.db_table for m in PARTITIONED]
    with connections[alias].cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, c.reltuples::bigint, pg_total_relation_size(c.oid) "
            "FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = ANY(%s) ORDER BY 1",
            [tables],
        )
        return [(name, max(int(rows), 0), int(size)) for name, rows, size in cursor.fetchall()]
