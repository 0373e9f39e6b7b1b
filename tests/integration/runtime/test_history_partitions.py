"""The partitioned history on PostgreSQL: weeks retired whole, long-lived runs kept, archives
restored across weeks, rows of a week without partitions kept in the DEFAULT partition."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path

import lifecycle_flows  # noqa: F401  (registers the workflows)
import pytest
from django.db import connection
from django.utils import timezone
from test_lifecycle_retention import archive_folder, snapshot  # noqa: F401  (a fixture)

from runtime.core.run_ids import id_at
from runtime.executor import Execution, ExecutionOutcome
from runtime.lifecycle.archive import SECTIONS, restore
from runtime.lifecycle.retention import expired, older_than, purge, retention_pass
from runtime.models import Event, Run, Step
from runtime.services import start_run
from runtime.store.lifecycle.partitions import (
    PARTITIONED,
    Period,
    ensure_partitions,
    period_of,
    periods,
)

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the history is partitioned on PostgreSQL"
)

WEEK = timedelta(days=7)


def weeks_ago(n: int) -> datetime:
    return timezone.now() - n * WEEK


@pytest.fixture
def created_at(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[datetime], None]]:
    """Make the runs started next look created at a moment of the past (their ids say when)."""
    field = Run._meta.get_field("id")

    def at(moment: datetime) -> None:
        ensure_partitions(connection.alias, [period_of(moment)])
        millis = int(moment.timestamp() * 1000)
        monkeypatch.setattr(field, "_get_default", lambda: id_at(millis))

    yield at


def finished(run_now: Callable[..., Execution], word: str, days_ago: float) -> uuid.UUID:
    run, _ = start_run("tests.lifecycle.tell", [word])
    assert run_now(run.id).outcome is ExecutionOutcome.COMPLETED
    Run.objects.filter(id=run.id).update(finished_at=timezone.now() - timedelta(days=days_ago))
    return run.id


def tables_of(period: Period) -> set[str]:
    names = {period.table(model) for model in PARTITIONED}
    with connection.cursor() as cursor:
        cursor.execute("SELECT relname FROM pg_class WHERE relname = ANY(%s)", [list(names)])
        return {row[0] for row in cursor.fetchall()}


def rows_in(table: str, run_id: uuid.UUID) -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {table} WHERE run_id = %s", [run_id])
        return int(cursor.fetchone()[0])


def test_history_partitions_retire_a_week_whose_runs_are_all_due(
    run_now: Callable[..., Execution], created_at: Callable[[datetime], None]
) -> None:
    created_at(weeks_ago(6))
    old = [finished(run_now, f"old-{n}", days_ago=40) for n in range(3)]
    created_at(timezone.now())
    recent = finished(run_now, "recent", days_ago=40)  # due too, but its week is the current one
    week = period_of(weeks_ago(6))
    assert rows_in(week.table(Step), old[0]) == 2 and rows_in(week.table(Event), old[0]) > 2

    report = purge(older_than(timedelta(days=30)), row_rule=older_than(timedelta(days=400)))

    assert report.runs == 3
    assert report.rows["runtime.Step"] == 6 and report.rows["runtime.StreamChunk"] == 3
    assert not Run.objects.filter(id__in=old).exists()
    assert tables_of(week) == set()  # dropped
    assert week.start not in {p.start for p in periods(connection.alias)}
    assert Step.objects.filter(run_id=recent).count() == 2  # left to the row deletes


def test_history_partitions_keep_the_rows_of_a_run_that_stays(
    run_now: Callable[..., Execution], created_at: Callable[[datetime], None]
) -> None:
    created_at(weeks_ago(6))
    due = [finished(run_now, f"due-{n}", days_ago=40) for n in range(2)]
    sleeper = finished(run_now, "sleeper", days_ago=0)
    Run.objects.filter(id=sleeper).update(status="waiting", finished_at=None)
    before = snapshot(sleeper)
    week = period_of(weeks_ago(6))

    purge(older_than(timedelta(days=30)))

    assert not Run.objects.filter(id__in=due).exists()
    assert snapshot(sleeper) == before  # every row of the run that stays, as it was
    assert tables_of(week) == {week.table(model) for model in PARTITIONED}
    assert all(rows_in(week.table(Step), run_id) == 0 for run_id in due)


def test_history_partitions_leave_a_week_mostly_kept_to_the_row_deletes(
    run_now: Callable[..., Execution],
    created_at: Callable[[datetime], None],
    fanfold_settings: Callable[..., None],
) -> None:
    fanfold_settings(RETENTION="30d")
    created_at(weeks_ago(6))
    due = finished(run_now, "due", days_ago=33)
    kept = [finished(run_now, f"kept-{n}", days_ago=1) for n in range(2)]
    week = period_of(weeks_ago(6))

    report = retention_pass()

    # Retiring the week would copy more than it frees; the due run is not a week past its
    # retention yet, so the row deletes leave it too.
    assert report is not None and report.runs == 0
    assert Run.objects.filter(id=due).exists() and rows_in(week.table(Step), due) == 2
    Run.objects.filter(id=due).update(finished_at=timezone.now() - timedelta(days=38))
    rule, rows = expired(timezone.now()), expired(weeks_ago(1))
    assert rule is not None and rows is not None

    report = purge(rule, row_rule=rows)

    assert report.runs == 1 and not Step.objects.filter(run_id=due).exists()
    assert all(Step.objects.filter(run_id=run_id).count() == 2 for run_id in kept)


def test_history_partitions_archive_and_restore_across_weeks(
    run_now: Callable[..., Execution],
    created_at: Callable[[datetime], None],
    archive_folder: Path,  # noqa: F811
) -> None:
    runs = []
    for weeks in (9, 7):
        created_at(weeks_ago(weeks))
        runs.append(finished(run_now, f"week-{weeks}", days_ago=50))
    before = {run_id: snapshot(run_id) for run_id in runs}

    report = purge(older_than(timedelta(days=30)), archive=True)

    assert (report.runs, report.archived) == (2, 2)
    assert not Run.objects.filter(id__in=runs).exists()
    for run_id in runs:
        assert (archive_folder / "runs" / f"{run_id}.json").exists()
        restore(run_id)  # its week's partitions are gone: the rows go to the DEFAULT partition
        assert snapshot(run_id) == before[run_id]
        assert rows_in(f"{Step._meta.db_table}_rest", run_id) == 2

    ensure_partitions(connection.alias, [period_of(weeks_ago(9))])

    week = period_of(weeks_ago(9))
    assert rows_in(week.table(Step), runs[0]) == 2  # moved out of the DEFAULT partition
    assert rows_in(f"{Step._meta.db_table}_rest", runs[0]) == 0
    assert snapshot(runs[0]) == before[runs[0]]


def test_history_partitions_are_created_ahead_by_the_retention_pass(
    fanfold_settings: Callable[..., None],
) -> None:
    fanfold_settings(RETENTION="30d")
    ahead = period_of(timezone.now() + 6 * WEEK)
    assert ahead.start not in {p.start for p in periods(connection.alias)}
    with connection.cursor() as cursor:
        for model in PARTITIONED:
            cursor.execute(f"DROP TABLE IF EXISTS {period_of(timezone.now()).table(model)}")

    retention_pass()

    starts = {p.start for p in periods(connection.alias)}
    assert period_of(timezone.now()).start in starts
    assert period_of(timezone.now() + 4 * WEEK).start in starts


def test_history_partitions_hold_each_run_in_its_weeks_partition(
    run_now: Callable[..., Execution], created_at: Callable[[datetime], None]
) -> None:
    created_at(weeks_ago(3))
    run_id = finished(run_now, "placed", days_ago=0)
    week = period_of(weeks_ago(3))

    for name, model in SECTIONS.items():
        if model not in PARTITIONED:  # search attributes: one small table, queried across runs
            continue
        rows = model._default_manager.filter(run_id=run_id).count()
        assert rows_in(week.table(model), run_id) == rows, name
        assert rows or name not in ("steps", "events", "stream_chunks"), name
