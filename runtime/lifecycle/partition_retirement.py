"""Retiring a week of history at once on PostgreSQL (docs/design/history.md).

A week whose period has ended is retired when every run created in it is due (its partitions
are emptied and dropped) or when at least half of them are (its partitions are emptied but for
the rows of the runs that stay: a run still sleeping, one kept longer by its workflow's
`retention=`). The due runs' own rows go first, in the purge's usual batches (archived first
when asked, SKIP LOCKED, their payload files after each commit); their history goes with the
partitions, which writes next to nothing to the WAL. Anything else due is left to the row
deletes (runtime.lifecycle.retention).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

from django.db import router
from django.db.models import Q

from runtime.models import Run
from runtime.store.lifecycle.partitions import (
    Period,
    drop_partitions,
    ensure_partitions,
    is_partitioned,
    periods,
    retire_week,
    runs_of,
    upcoming,
)
from runtime.store.lifecycle.purge import delete_unlocked, finished_runs

Batch = tuple[list[Any], dict[str, int], int]


def history_alias() -> str:
    return router.db_for_write(Run)


def partitioned() -> bool:
    """Whether the history is partitioned on the database runs are written to."""
    return is_partitioned(history_alias())


def create_ahead(now: datetime) -> list[Period]:
    """Create this week's partitions and the next weeks' where missing (retention pass)."""
    alias = history_alias()
    if not is_partitioned(alias):
        return []
    return ensure_partitions(alias, list(upcoming(now)))


def retirable(rule: Q, now: datetime) -> Iterator[Period]:
    """The ended weeks worth retiring now: every run due, or at least half of them (a week
    without runs left is retired too: its rows, if any, are orphans)."""
    for period in periods(history_alias()):
        if period.end > now:
            continue
        total = runs_of(period).count()
        due = finished_runs(rule).filter(id__gte=period.low, id__lt=period.high).count()
        if 2 * due >= total:
            yield period


def period_batches(
    rule: Q,
    now: datetime,
    batch: int,
    archiver: Callable[[], Callable[[list[uuid.UUID]], int] | None],
) -> Iterator[Batch]:
    """Retire every retirable week: batches of run rows, then one batch of the partitions'
    rows (no keys). `archiver()` makes the `before` hook of a batch (None: no archive)."""
    alias = history_alias()
    for period in list(retirable(rule, now)):
        # Walked by key from where the last batch ended, so a batch reads its own runs and not
        # the index entries of the runs deleted before it (dead until a vacuum): taken oldest
        # finished first, each batch rescanned every one deleted so far. Runs skipped as
        # locked stay, and the week with them (the next pass).
        low = period.low
        while True:
            due = finished_runs(rule).filter(id__gte=low, id__lt=period.high)
            before = archiver()
            pks, counts = delete_unlocked(due, batch, before, history=False, order=("pk",))
            if not pks:
                break
            low = _after(pks[-1])
            yield pks, counts, getattr(before, "written", 0)
        emptied = retire_week(alias, period)
        if emptied is None:  # its locks were busy: the next pass empties it
            continue
        removed, kept = emptied
        if not kept:
            drop_partitions(alias, period)  # if its lock is busy, the next pass drops it
        yield [], removed, 0


def _after(pk: uuid.UUID) -> uuid.UUID:
    """The least key above `pk` (the next batch's lower bound)."""
    return uuid.UUID(int=pk.int + 1)
