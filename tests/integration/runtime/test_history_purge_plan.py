"""A week's purge batch reads its runs by a range of the run key, not every finished run:
taken by finished time, each batch walked the index entries of the runs deleted before it
(dead until a vacuum), so its cost grew with the history purged, not with the batch."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from bench.history_load import load
from runtime.lifecycle.retention import older_than
from runtime.store.lifecycle.partitions import Period, drop_partitions, period_of
from runtime.store.lifecycle.purge import finished_runs

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the plan is PostgreSQL's"
)


@pytest.fixture
def due_week() -> Iterator[Period]:
    """A week of 2,000 finished runs, all due, loaded and analysed as a history is (the plan
    follows the statistics: those another test's deleted runs left would steer it)."""
    moment = timezone.now() - timedelta(days=14)
    load(2000, 2, moment)
    yield period_of(moment)
    drop_partitions(connection.alias, period_of(moment))


def batch_plan(week: Period, order: tuple[str, ...]) -> list[str]:
    due = finished_runs(older_than(timedelta(days=7))).filter(id__gte=week.low, id__lt=week.high)
    locked = due.select_for_update(skip_locked=True, of=("self",)).order_by(*order)
    with transaction.atomic(), connection.cursor() as cursor:
        sql, params = locked.values_list("pk", flat=True)[:500].query.sql_with_params()
        cursor.execute(f"EXPLAIN (COSTS OFF) {sql}", params)
        return [row[0] for row in cursor.fetchall()]


def test_a_week_batch_walks_the_key_range_in_order(due_week: Period) -> None:
    plan = "\n".join(batch_plan(due_week, ("pk",)))
    assert "runtime_run_pkey" in plan, plan
    assert "Index Cond" in plan and ">=" in plan and "<" in plan, plan
    assert "Sort" not in plan, plan  # the batch is the first keys of the range: no full read


def test_the_oldest_finished_first_order_sorts_the_whole_week(due_week: Period) -> None:
    plan = "\n".join(batch_plan(due_week, ("finished_at", "pk")))
    assert "Sort" in plan, plan  # what each batch paid before it walked the keys
