"""The pending list (PostgreSQL): a start writes one pending row, the drain moves it into the
attribute rows once (concurrent drains skip each other's rows), and everything that reads or
removes a run's attributes sees the pending ones (runtime.store.runs.search_pending)."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import search_flows  # noqa: F401  (registers the workflows)
from django.db import connection, connections, transaction
from test_search_admin import LIST, staff

from runtime import fork, start
from runtime.lifecycle.archive import SECTIONS, read_archive, restore, write_archives
from runtime.models import Run, SearchAttribute, SearchPending
from runtime.run_queries import run_query
from runtime.store.lifecycle import purge
from runtime.store.runs.search_pending import DRAIN_BATCH, drain, drain_all, pending_count
from runtime.store.runs.search_rows import attributes_of, text_values
from runtime.testing import InMemoryDispatcher
from runtime.worker import housekeeping

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="SQLite writes the attribute rows at the start"
)
DUE = datetime(2026, 12, 24, 9, 30, tzinfo=UTC)
VALUES = {"customer": 42, "region": "eu", "amount": 10.5, "vip": True, "due": DUE}


def ids(**search: Any) -> set[uuid.UUID]:
    return set(run_query(search=search).values_list("id", flat=True))


def _drain_held(limit: int, hold: Callable[[], object]) -> tuple[threading.Thread, list[int]]:
    """A drain of up to `limit` rows in a thread of its own, its transaction kept open (its
    rows locked) until `hold` returns; returned once it has drained, with the list that holds
    how many runs it moved."""
    held, moved = threading.Event(), []

    def body() -> None:
        try:
            with transaction.atomic():
                moved.append(drain(limit=limit).runs)
                held.set()
                hold()
        finally:
            connections.close_all()

    thread = threading.Thread(target=body)
    thread.start()
    assert held.wait(10)
    return thread, moved


def test_search_pending_a_start_writes_one_pending_row_and_no_attribute_row(
    runs: InMemoryDispatcher,
) -> None:
    run = start("tests.search.quick", search=VALUES)
    (pending,) = SearchPending.objects.all()
    assert pending.run_id == run.id
    assert pending.attributes["customer"] == {"kind": "int", "num": 42.0}
    assert pending.attributes["due"] == {"kind": "datetime", "at": DUE.isoformat()}
    assert not SearchAttribute.objects.exists()
    # Read as the drained rows will be: the run page, the API, the CLI.
    expected = {"amount": 10.5, "customer": 42, "due": DUE.isoformat(), "region": "eu", "vip": True}
    assert attributes_of([run.id]) == {run.id: expected}
    assert text_values("region", 10) == ["eu"]

    assert drain_all().runs == 1
    assert attributes_of([run.id]) == {run.id: expected}
    assert text_values("region", 10) == ["eu"]


def test_search_pending_the_drain_is_idempotent(runs: InMemoryDispatcher) -> None:
    started = [start("tests.search.quick", search=VALUES).id for _ in range(5)]
    assert drain(limit=3).runs == 3
    assert drain_all(limit=3).runs == 2
    assert drain_all().runs == 0
    assert pending_count() == 0
    assert SearchAttribute.objects.count() == 5 * len(VALUES)
    assert ids(customer=42) == set(started)


def test_search_pending_two_concurrent_drains_neither_lose_nor_duplicate(
    runs: InMemoryDispatcher,
) -> None:
    started = {start("tests.search.quick", search={"customer": n}).id for n in range(100)}
    release = threading.Event()
    # Its 40 rows stay locked until the other has drained.
    other, moved = _drain_held(40, lambda: release.wait(10))
    moved.append(drain_all(limit=1000).runs)  # skips the rows held: takes the other 60
    release.set()
    other.join()
    assert moved == [40, 60]
    assert pending_count() == 0
    rows = SearchAttribute.objects.filter(name="customer")
    assert rows.count() == 100 and set(rows.values_list("run_id", flat=True)) == started


def test_search_pending_a_query_waits_for_a_drain_that_holds_its_run(
    runs: InMemoryDispatcher,
) -> None:
    # The drain took the run's row but has not committed: the query's own drain waits for it
    # and then reads the rows it inserted (read-your-writes while workers drain).
    run = start("tests.search.quick", search={"customer": 77})
    other, moved = _drain_held(DRAIN_BATCH, lambda: time.sleep(0.5))
    assert ids(customer=77) == {run.id}
    other.join()
    assert moved == [1] and pending_count() == 0


def test_search_pending_set_search_drains_first_and_keeps_the_newer_value(
    runs: InMemoryDispatcher,
) -> None:
    run = start("tests.search.order", "o-p", search={"customer": 7, "region": "us"})
    assert pending_count() == 1
    runs.join()
    assert run.wait(timeout=10) == "o-p"  # its body set region="eu-west" (position 2)
    assert pending_count() == 0
    assert ids(region="us") == set()  # no longer found by the value it was started with
    assert ids(region="eu-west") == ids(customer=7) == {run.id}
    drain_all()
    row = SearchAttribute.objects.get(run_id=run.id, name="region")
    assert (row.text, row.position) == ("eu-west", 2)


def test_search_pending_a_fork_of_a_pending_run_starts_with_its_values(
    runs: InMemoryDispatcher,
) -> None:
    source = start("tests.search.quick", search=VALUES)
    copy = fork(source.id, 1)
    assert SearchPending.objects.filter(run_id=source.id).exists()
    assert attributes_of([copy.id])[copy.id] == attributes_of([source.id])[source.id]
    assert ids(customer=42, due=DUE) == {source.id, copy.id}


def test_search_pending_purge_deletes_pending_rows_before_attribute_rows(
    runs: InMemoryDispatcher,
) -> None:
    # A drain moving a run's row while the purge deletes the run holds the pending row: the
    # purge waits for it there, and then deletes the attribute rows the drain inserted.
    labels = [label for _, label in purge._statements(connection.ops.quote_name)]
    assert labels.index(SearchPending._meta.label) < labels.index(SearchAttribute._meta.label)
    gone, kept = (start("tests.search.quick", search=VALUES).id for _ in range(2))
    pks, counts = purge.delete_unlocked(Run.objects.filter(pk=gone), 10)
    assert pks == [gone] and counts[SearchPending._meta.label] == 1
    assert list(SearchPending.objects.values_list("run_id", flat=True)) == [kept]


def test_search_pending_an_archive_carries_pending_rows(
    runs: InMemoryDispatcher, settings: Any, tmp_path: Path
) -> None:
    settings.STORAGES = {
        **settings.STORAGES,
        "fanfold_archive": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": tmp_path},
        },
    }
    assert list(SECTIONS).index("search_pending") < list(SECTIONS).index("search_attributes")
    run = start("tests.search.quick", search=VALUES)
    assert write_archives([run.id]) == 1
    assert [row["run_id"] for row in read_archive(run.id)["search_pending"]] == [str(run.id)]
    purge.delete_unlocked(Run.objects.filter(pk=run.id), 10)
    assert ids(customer=42) == set()

    restore(run.id)
    assert ids(customer=42) == {run.id}
    drain_all()
    assert ids(customer=42) == {run.id} and SearchAttribute.objects.count() == len(VALUES)


def test_search_pending_the_workers_sweep_drains_it(runs: InMemoryDispatcher) -> None:
    started = [start("tests.search.quick", search=VALUES).id for _ in range(3)]
    sweep = housekeeping._Housekeeping()
    sweep.flow_pass()
    assert pending_count() == 0
    assert set(SearchAttribute.objects.values_list("run_id", flat=True)) == set(started)


def test_search_pending_the_admin_offers_and_finds_pending_values(
    runs: InMemoryDispatcher,
) -> None:
    first = start("tests.search.quick", search={"customer": 5, "region": "eu-pending"})
    second = start("tests.search.quick", search={"customer": 6, "region": "eu-later"})
    admin = staff("staff-pending")
    chosen = admin.get(LIST, {"workflow__exact": "tests.search.quick"}).content.decode()
    assert "region = eu-later" in chosen and "customer = 5" in chosen  # read while pending
    assert pending_count() == 2
    page = admin.get(f"{LIST}{second.id}/change/").content.decode()
    assert "eu-later" in page
    by_value = admin.get(LIST, {"q": "eu-pending"}).content.decode()
    assert str(first.id)[-8:] in by_value and str(second.id)[-8:] not in by_value
    by_number = admin.get(LIST, {"q": "6"}).content.decode()
    assert str(second.id)[-8:] in by_number and str(first.id)[-8:] not in by_number
