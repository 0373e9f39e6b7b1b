"""Each list filter and search operator (runtime.list_runs / run_query). Runs on PostgreSQL in
the suite, and on SQLite through test_search_sqlite.py."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
import search_flows  # noqa: F401  (registers the workflows)
from django.contrib.auth.models import User
from django.db import connection

from runtime import list_runs, start
from runtime.core.identity import child_run_key
from runtime.core.search import InvalidFilter
from runtime.models import Run, SearchAttribute
from runtime.run_queries import run_query
from runtime.store.runs.search_pending import drain_all, pending_count
from runtime.testing import InMemoryDispatcher

T0 = datetime(2026, 11, 1, tzinfo=UTC)
ROWS = [  # customer, region, amount, vip, due, status
    (42, "eu-west", 100.0, True, T0, "failed"),
    (42, "us-east", 250.0, False, T0 + timedelta(days=1), "completed"),
    (7, "eu-north", 999.5, False, T0 + timedelta(days=2), "running"),
    (8, "ap-south", 10.0, True, T0 + timedelta(days=3), "waiting"),
]


@pytest.fixture(params=["pending", "drained"])
def orders(request: pytest.FixtureRequest, runs: InMemoryDispatcher) -> list[uuid.UUID]:
    """Four runs of tests.search.quick, oldest first, created a day apart from T0; their
    attributes still in the pending list (PostgreSQL) or drained into the attribute rows."""
    ids = []
    for n, (customer, region, amount, vip, due, status) in enumerate(ROWS):
        values = {"customer": customer, "region": region, "amount": amount, "vip": vip, "due": due}
        run = start("tests.search.quick", search=values)
        moment = T0 + timedelta(days=n)
        Run.objects.filter(id=run.id).update(
            status=status, created_at=moment, started_at=moment + timedelta(hours=1),
            finished_at=moment + timedelta(hours=2) if status in ("failed", "completed") else None,
        )  # fmt: skip
        ids.append(run.id)
    if connection.vendor == "postgresql":  # found alike before and after the drain
        assert pending_count() == len(ROWS) and not SearchAttribute.objects.exists()
    if request.param == "drained":
        drain_all()
        assert pending_count() == 0
    return ids


def found(**filters: object) -> list[int]:
    """The rows (indexes of ROWS) the filters find, newest first."""
    ids = list(run_query(workflow="tests.search.quick", **filters).values_list("id", flat=True))  # type: ignore[arg-type]
    everything = list(Run.objects.filter(workflow="tests.search.quick").order_by("created_at"))
    return [[r.id for r in everything].index(i) for i in ids]


@pytest.mark.parametrize(
    ("search", "expected"),
    [
        ({"customer": 42}, [1, 0]),
        ({"customer__in": [7, 8]}, [3, 2]),
        ({"customer__gte": 8}, [3, 1, 0]),
        ({"customer__lte": 8}, [3, 2]),
        ({"amount__gte": 100, "amount__lte": 250}, [1, 0]),
        ({"amount": 999.5}, [2]),
        ({"amount__in": [10, 999.5]}, [3, 2]),
        ({"region": "us-east"}, [1]),
        ({"region__in": ["eu-west", "ap-south"]}, [3, 0]),
        ({"region__contains": "eu"}, [2, 0]),
        ({"region__gte": "eu", "region__lte": "eu-z"}, [2, 0]),
        ({"vip": True}, [3, 0]),
        ({"vip": False}, [2, 1]),
        ({"due": T0 + timedelta(days=1)}, [1]),
        ({"due__gte": T0 + timedelta(days=2)}, [3, 2]),
        ({"due__lte": (T0 + timedelta(days=1)).isoformat()}, [1, 0]),
        ({"due__in": [T0, T0 + timedelta(days=3)]}, [3, 0]),
        ({"customer": 42, "region__contains": "us"}, [1]),
        ({"customer": 5}, []),
    ],
)
def test_search_filters_each_operator(
    orders: list[uuid.UUID], search: dict[str, object], expected: list[int]
) -> None:
    assert found(search=search) == expected


@pytest.mark.parametrize(
    ("search", "expected"),
    [
        ({"customer": "42"}, [1, 0]),
        ({"customer__in": "7,8"}, [3, 2]),
        ({"amount__gte": "250"}, [2, 1]),
        ({"vip": "true"}, [3, 0]),
        ({"due__gte": "2026-11-03T00:00:00+00:00"}, [3, 2]),
        ({"region__in": "us-east,ap-south"}, [3, 1]),
    ],
)
def test_search_filters_take_query_string_text(
    orders: list[uuid.UUID], search: dict[str, object], expected: list[int]
) -> None:
    assert found(search=search, text=True) == expected


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"status": "failed"}, [0]),
        ({"status": ["running", "waiting"]}, [3, 2]),
        ({"status": "completed,failed", "search": {"customer": 42}}, [1, 0]),
        ({"created_after": T0 + timedelta(days=2)}, [3, 2]),
        ({"created_before": T0 + timedelta(days=1)}, [0]),
        ({"started_after": T0 + timedelta(days=1, hours=1)}, [3, 2, 1]),
        ({"started_before": T0 + timedelta(hours=2)}, [0]),
        ({"finished_after": T0 + timedelta(days=1)}, [1]),
        ({"finished_before": T0 + timedelta(days=1)}, [0]),
        ({"created_after": "2026-11-02T12:00:00Z"}, [3, 2]),
    ],
)
def test_search_filters_status_and_times(
    orders: list[uuid.UUID], filters: dict[str, object], expected: list[int]
) -> None:
    assert found(**filters) == expected


def test_search_filters_owner_parent_and_forked_from(
    orders: list[uuid.UUID], runs: InMemoryDispatcher
) -> None:
    ada = User.objects.create_user("ada-search")
    Run.objects.filter(id=orders[1]).update(owner_id=ada.pk)
    assert found(owner=ada.pk) == [1]
    assert found(owner=ada) == [1]
    Run.objects.filter(id=orders[2]).update(idempotency_key=child_run_key(orders[0], 3))
    assert found(parent=orders[0]) == [2]
    assert found(parent=str(orders[1])) == []
    Run.objects.filter(id=orders[3]).update(forked_from_id=orders[0])
    assert found(forked_from=orders[0]) == [3]


def test_search_list_runs_returns_handles_newest_first_under_a_user(
    orders: list[uuid.UUID],
) -> None:
    handles = list_runs(workflow="tests.search.quick", search={"customer": 42})
    assert [h.id for h in handles] == [orders[1], orders[0]]
    assert [h.id for h in list_runs(search={"customer": 42}, limit=1)] == [orders[1]]
    ada = User.objects.create_user("ada-list")
    Run.objects.filter(id=orders[0]).update(owner_id=ada.pk)
    assert [h.id for h in list_runs(search={"customer": 42}, user=ada)] == [orders[0]]
    nobody = User.objects.create_user("nobody-list")
    assert list_runs(search={"customer": 42}, user=nobody) == []


@pytest.mark.parametrize(
    ("filters", "name"),
    [
        ({"search": {"nope": 1}}, "search.nope"),
        ({"search": {"customer__like": 1}}, "search.customer__like"),
        ({"search": {"customer": "x"}}, "search.customer"),
        ({"search": {"customer__contains": 4}}, "search.customer__contains"),
        ({"search": {"vip__gte": True}}, "search.vip__gte"),
        ({"search": {"region__in": []}}, "search.region__in"),
        ({"search": {"bad name": 1}}, "search.bad name"),
        ({"status": "bogus"}, "status"),
        ({"status": []}, "status"),
        ({"created_after": "yesterday"}, "created_after"),
        ({"finished_before": datetime(2026, 1, 1)}, "finished_before"),
        ({"owner": "ada"}, "owner"),
        ({"parent": "not-a-run"}, "parent"),
        ({"forked_from": 12}, "forked_from"),
        ({"updated_after": T0}, "updated_after"),
        ({"app_version": "v" * 65}, "app_version"),
        ({"app_version": 3}, "app_version"),
        ({"task": ""}, "task"),
    ],
)
def test_search_filters_refuse_what_cannot_be_used_naming_it(
    orders: list[uuid.UUID], filters: dict[str, object], name: str
) -> None:
    with pytest.raises(InvalidFilter) as refused:
        run_query(**filters)  # type: ignore[arg-type]
    assert refused.value.name == name


def test_search_filters_app_version(orders: list[uuid.UUID]) -> None:
    Run.objects.filter(id__in=orders[:2]).update(app_version="v1")
    Run.objects.filter(id=orders[2]).update(app_version="v2")
    assert found(app_version="v1") == [1, 0]
    assert found(app_version="v2", status="running") == [2]
    assert found(app_version="v1", search={"customer": 42}, status="failed") == [0]
    assert found(app_version="nowhere") == []
    assert [h.id for h in list_runs(app_version="v2")] == [orders[2]]
