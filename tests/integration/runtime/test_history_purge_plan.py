"""A week's purge batch reads its runs by a range of the run key, not every finished run:
taken by finished time, each batch walked the index entries of the runs deleted before it
(dead until a vacuum), so its cost grew with the history purged, not with the batch."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from runtime.lifecycle.retention import older_than
from runtime.store.partitions import period_of
from runtime.store.purge import finished_runs

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the plan is PostgreSQL's"
)


def batch_plan(order: tuple[str, ...]) -> list[str]:
    week = period_of(timezone.now() - timedelta(days=14))
    due = finished_runs(older_than(timedelta(days=7))).filter(id__gte=week.low, id__lt=week.high)
    locked = due.select_for_update(skip_locked=True, of=("self",)).order_by(*order)
    with transaction.atomic(), connection.cursor() as cursor:
        sql, params = locked.values_list("pk", flat=True)[:500].query.sql_with_params()
        cursor.execute("SET LOCAL enable_seqscan = off")  # an empty table: plan as for a big one
        cursor.execute(f"EXPLAIN (COSTS OFF) {sql}", params)
        return [row[0] for row in cursor.fetchall()]


@pytest.mark.django_db
def test_a_week_batch_walks_the_key_range_in_order() -> None:
    plan = "\n".join(batch_plan(("pk",)))
    assert "runtime_run_pkey" in plan, plan
    assert "Index Cond" in plan and ">=" in plan and "<" in plan, plan
    assert "Sort" not in plan, plan  # the batch is the first keys of the range: no full read
