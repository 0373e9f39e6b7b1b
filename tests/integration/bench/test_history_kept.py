"""`bench history`'s kept history: loaded once, reused while it is the one asked for, loaded
again (the old one purged) when it is not, and never left switched out."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from bench.history_conditions import HistorySwitch
from bench.history_kept import KEPT_WORKFLOW, REUSABLE_FOR, clear, kept_history
from runtime.models import Event, Run, Step
from runtime.store.lifecycle.partitions import periods

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="the history is partitioned on PostgreSQL"
    ),
]


@pytest.fixture(autouse=True)
def cleared() -> Iterator[None]:
    yield
    clear()  # its weeks' partitions outlive the test's flush


def kept_runs() -> int:
    return Run.objects.filter(workflow=KEPT_WORKFLOW).count()


def test_kept_history_is_loaded_into_its_weeks_then_reused() -> None:
    now = timezone.now()
    first = kept_history(30, 4, 3, now)

    assert (first.state, len(first.periods)) == ("loaded", 3)
    assert [p.start for p in first.periods] == sorted(p.start for p in first.periods)
    assert {p.start for p in first.periods} <= {p.start for p in periods(connection.alias)}
    assert kept_runs() == 30
    assert Event.objects.filter(run__workflow=KEPT_WORKFLOW).count() == 120
    assert Step.objects.filter(run__workflow=KEPT_WORKFLOW).count() == 60
    for period in first.periods:  # ten runs a week
        assert Run.objects.filter(id__gte=period.low, id__lt=period.high).count() == 10
    # Long-lived runs: neither the bench's purge (5 days) nor retention (30) may take them.
    assert not Run.objects.filter(workflow=KEPT_WORKFLOW, finished_at__lt=now - REUSABLE_FOR)

    again = kept_history(30, 4, 3, now + timedelta(hours=2))

    assert (again.state, again.periods, again.load_seconds) == ("reused", first.periods, 0.0)
    assert kept_runs() == 30


@pytest.mark.parametrize(
    ("runs", "events", "weeks", "later"),
    [
        (40, 4, 3, timedelta(0)),  # more runs
        (30, 6, 3, timedelta(0)),  # longer runs
        (30, 4, 2, timedelta(0)),  # fewer weeks
        (30, 4, 3, REUSABLE_FOR),  # its runs would be due to the bench's purge within a day
    ],
)
def test_another_kept_history_replaces_the_one_found(
    runs: int, events: int, weeks: int, later: timedelta
) -> None:
    now = timezone.now()
    old = kept_history(30, 4, 3, now)

    new = kept_history(runs, events, weeks, now + later)

    assert (new.state, len(new.periods)) == ("loaded", weeks)
    assert kept_runs() == runs
    assert set(Run.objects.filter(workflow=KEPT_WORKFLOW).values_list("last_seq", flat=True)) == {
        events
    }
    starts = {p.start for p in periods(connection.alias)}
    # The old weeks went whole, as retention retires them, where no new week took their place.
    assert not {p.start for p in old.periods} - {p.start for p in new.periods} & starts


def test_weeks_a_killed_run_left_switched_out_are_dropped_and_loaded_again() -> None:
    kept = kept_history(20, 4, 2, timezone.now())
    HistorySwitch(kept.periods).switch(full=False)  # killed here: its weeks are detached

    again = kept_history(20, 4, 2, timezone.now())

    assert again.state == "loaded"
    assert Event.objects.filter(run__workflow=KEPT_WORKFLOW).count() == 80
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname FROM pg_class WHERE relkind = 'r' AND NOT relispartition "
            "AND relname ~ '^runtime_[a-z_]+_h[0-9]{8}$'"
        )
        assert cursor.fetchall() == []


def test_no_kept_history_clears_the_one_found() -> None:
    kept_history(20, 4, 2, timezone.now())

    none = kept_history(0, 4, 0, timezone.now())

    assert (none.state, none.periods) == ("none", [])
    assert kept_runs() == 0
    assert not Event.objects.filter(run__workflow=KEPT_WORKFLOW).exists()
