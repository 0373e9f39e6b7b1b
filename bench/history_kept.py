"""`bench history`'s kept history: the part of a large history that its purge leaves, loaded
once and reused by the runs after it.

An installation a year old does not retire its whole history at once: it retires a week
beside the many it keeps. So does the bench when asked for more history than the purge
retires (`--events` above `--due-events`): the due events are loaded each run into the week of
ten days ago, and the purge (`--older-than 5d`) retires them; the rest are kept, in weeks of
their own as many as it takes to hold each no more than the due week, from 31 days back
(before the weeks of the WAL figures, 17 and 24 days back). The kept runs were created in
their weeks and finished within the hour before their load: long-lived runs, which neither
the purge nor the workers' retention (30 days by default) may take.

Loading 45,000,000 events by COPY takes a quarter of an hour here; a later run whose history
is the same (as many kept runs, of as many events, in as many attached weeks, none within a
day of being due) reuses it, and reports `kept_history: "reused"`. Any other kept history is
purged first (whole weeks dropped, as retention does) and loaded again.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db import connection
from django.db.models import Count, Max, Min, Q

from bench.history_conditions import BOUNDS_SUFFIX, bound
from bench.history_load import load
from runtime.core.run_ids import PERIOD, created_at
from runtime.lifecycle.retention import purge
from runtime.models import Event, Run, Step
from runtime.store.lifecycle.partitions import Period, drop_partitions, period_of

KEPT_WORKFLOW = "bench.history.kept"
NEWEST_WEEK_AGE = timedelta(days=31)
FINISHED_BEFORE_LOAD = timedelta(hours=1)
# Reused while its runs finished less than this long ago: the bench's purge takes the runs
# that finished more than five days ago.
REUSABLE_FOR = timedelta(days=4)


@dataclass(frozen=True)
class KeptHistory:
    periods: list[Period]
    state: str  # "none", "loaded" or "reused"
    load_seconds: float = 0.0


def kept_history(runs: int, events: int, weeks: int, now: datetime) -> KeptHistory:
    """`runs` kept runs of `events` events each over `weeks` weeks: found, or loaded anew."""
    _drop_detached()
    if runs == 0:
        clear()
        return KeptHistory([], "none")
    found = _found(runs, events, weeks, now)
    if found is not None:
        return KeptHistory(found, "reused")
    clear()
    began = time.monotonic()
    periods = []
    for week in range(weeks):
        moment = now - NEWEST_WEEK_AGE - week * PERIOD
        period = period_of(moment)
        bound(period)
        share = runs // weeks + (1 if week < runs % weeks else 0)
        load(share, events, moment, KEPT_WORKFLOW, finished=now - FINISHED_BEFORE_LOAD)
        periods.append(period)
    return KeptHistory(sorted(periods, key=lambda p: p.start), "loaded", time.monotonic() - began)


def _found(runs: int, events: int, weeks: int, now: datetime) -> list[Period] | None:
    """The kept history's weeks if what the database holds is the one asked for."""
    kept = Run.objects.filter(workflow=KEPT_WORKFLOW)
    found = kept.aggregate(
        count=Count("id"),
        least_seq=Min("last_seq"),
        most_seq=Max("last_seq"),
        finished=Min("finished_at"),
    )
    if found["count"] != runs or (found["least_seq"], found["most_seq"]) != (events, events):
        return None
    if found["finished"] is None or found["finished"] < now - REUSABLE_FOR:
        return None
    ids = kept.order_by("id").values_list("id", flat=True)
    periods = _weeks_between(ids.first(), ids.last())
    if len(periods) != weeks or not all(_attached(p) for p in periods):
        return None
    return periods


def _weeks_between(first: uuid.UUID | None, last: uuid.UUID | None) -> list[Period]:
    oldest = created_at(first) if first is not None else None
    newest = created_at(last) if last is not None else None
    if oldest is None or newest is None:
        return []
    periods = [period_of(oldest)]
    while periods[-1].end <= newest:
        periods.append(Period(periods[-1].end))
    return periods


def _attached(period: Period) -> bool:
    """Whether the week's loaded partitions are partitions (a killed run may leave them out)."""
    names = [period.table(model) for model in (Step, Event)]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_class WHERE relname = ANY(%s) AND relispartition", [names]
        )
        return bool(cursor.fetchone()[0] == len(names))


def clear() -> None:
    """Purge any kept history: its weeks go whole, as retention retires them."""
    purge(Q(workflow=KEPT_WORKFLOW))


def _drop_detached() -> None:
    """Drop the weeks a bench run killed while its history was switched out left behind:
    their loaded tables, detached (known by the bounds only `bound` gives), and the week's
    other partitions with them, so the week can be made again."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_constraint k ON k.conrelid = c.oid "
            "WHERE c.relkind = 'r' AND NOT c.relispartition AND k.conname = c.relname || %s",
            [BOUNDS_SUFFIX],
        )
        starts = {row[0][-8:] for row in cursor.fetchall()}  # <table>_hYYYYMMDD
    for start in starts:  # every table of the week by name, detached or not
        week = Period(datetime.strptime(start, "%Y%m%d").replace(tzinfo=UTC))
        drop_partitions(connection.alias, week)
