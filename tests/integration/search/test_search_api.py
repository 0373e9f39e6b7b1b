"""Search attributes over REST: set at start (wrong types a 400), shown on the run, and every
list filter of GET /api/runs/ (a malformed one a 400 naming it), under the caller's rights."""

from __future__ import annotations

import json
from typing import Any

import pytest
import search_flows  # noqa: F401  (registers the workflows)
from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from runtime.models import Run, SearchAttribute, SearchPending
from runtime.testing import InMemoryDispatcher
from tests.support.users import operator, starter


def client_of(user: User) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return api


@pytest.fixture
def ada(runs: InMemoryDispatcher) -> APIClient:
    return client_of(operator("ada"))


def post(api: APIClient, body: dict[str, Any]) -> Any:
    return api.post("/api/runs/", json.dumps(body), content_type="application/json")


def start(api: APIClient, **search: Any) -> str:
    response = post(api, {"workflow": "tests.search.quick", "search": search})
    assert response.status_code == 201, response.content
    return str(response.json()["id"])


def test_search_api_start_sets_attributes_and_shows_them(ada: APIClient) -> None:
    run_id = start(ada, customer=42, region="eu", due="2026-12-24T09:30:00+00:00")
    detail = ada.get(f"/api/runs/{run_id}/").json()
    assert detail["search"] == {
        "customer": 42,
        "due": "2026-12-24T09:30:00+00:00",
        "region": "eu",
    }
    listed = ada.get("/api/runs/?search.customer=42").json()["results"]
    assert [(r["id"], r["search"]["region"]) for r in listed] == [(run_id, "eu")]


@pytest.mark.parametrize(
    "search",
    [
        {"nope": 1},
        {"customer": "42"},
        {"customer": 1.5},
        {"vip": "yes"},
        {"due": "2026-12-24T09:30:00"},
        {"region": "x" * 300},
        ["customer"],
    ],
)
def test_search_api_start_refuses_wrong_attributes_with_400(ada: APIClient, search: Any) -> None:
    response = post(ada, {"workflow": "tests.search.quick", "search": search})
    assert response.status_code == 400, response.content
    assert not Run.objects.exists() and not SearchAttribute.objects.exists()
    assert not SearchPending.objects.exists()


@pytest.fixture
def orders(ada: APIClient) -> list[str]:
    ids = [
        start(ada, customer=42, region="eu-west", amount=100.0, vip=True),
        start(ada, customer=42, region="us-east", amount=250.0, vip=False),
        start(ada, customer=7, region="eu-north", amount=999.5, vip=False),
    ]
    Run.objects.filter(id=ids[0]).update(status="failed")
    Run.objects.filter(id=ids[2]).update(status="running")
    return ids


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("search.customer=42", [1, 0]),
        ("search.customer=42&status=failed", [0]),
        ("search.customer__in=7,42&status=failed,running", [2, 0]),
        ("search.amount__gte=250", [2, 1]),
        ("search.amount__lte=250&search.amount__gte=100.0", [1, 0]),
        ("search.region__contains=eu", [2, 0]),
        ("search.region__in=us-east", [1]),
        ("search.vip=false", [2, 1]),
        ("workflow=tests.search.quick&search.customer=7", [2]),
        ("created_after=2000-01-01T00:00:00Z&search.customer=7", [2]),
        ("created_before=2000-01-01T00:00:00Z", []),
    ],
)
def test_search_api_list_filters(
    ada: APIClient, orders: list[str], query: str, expected: list[int]
) -> None:
    response = ada.get(f"/api/runs/?{query}")
    assert response.status_code == 200, response.content
    assert [r["id"] for r in response.json()["results"]] == [orders[i] for i in expected]


def test_search_api_list_pages_by_cursor(ada: APIClient, orders: list[str]) -> None:
    first = ada.get("/api/runs/?search.customer=42&page_size=1").json()
    assert [r["id"] for r in first["results"]] == [orders[1]]
    second = ada.get(first["next"]).json()
    assert [r["id"] for r in second["results"]] == [orders[0]]
    assert second["next"] is None


@pytest.mark.parametrize(
    ("query", "name"),
    [
        ("search.nope=1", "search.nope"),
        ("search.customer=abc", "search.customer"),
        ("search.customer__like=1", "search.customer__like"),
        ("search.amount__contains=1", "search.amount__contains"),
        ("search.vip=maybe", "search.vip"),
        ("search.customer=1&search.customer=2", "search.customer"),
        ("status=bogus", "status"),
        ("status=running,bogus", "status"),
        ("created_after=yesterday", "created_after"),
        ("owner=ada", "owner"),
        ("parent=nope", "parent"),
        ("forked_from=nope", "forked_from"),
        ("app_version=" + "v" * 65, "app_version"),
        ("task=" + "t" * 256, "task"),
    ],
)
def test_search_api_bad_filter_is_400_naming_it(
    ada: APIClient, orders: list[str], query: str, name: str
) -> None:
    response = ada.get(f"/api/runs/?{query}")
    assert response.status_code == 400, response.content
    body = response.json()["error"]
    assert body["code"] == "invalid"
    assert name in json.dumps(body)


def test_search_api_another_users_runs_never_appear(runs: InMemoryDispatcher) -> None:
    bob, eve = starter("bob"), starter("eve")
    bobs = client_of(bob)
    mine = start(bobs, customer=42)
    theirs = start(client_of(eve), customer=42)
    listed = [r["id"] for r in bobs.get("/api/runs/?search.customer=42").json()["results"]]
    assert listed == [mine]
    assert theirs not in json.dumps(bobs.get("/api/runs/?search.customer__in=42,43").json())
    assert bobs.get(f"/api/runs/?owner={eve.pk}").json()["results"] == []
    assert bobs.get(f"/api/runs/{theirs}/").status_code == 404


def test_search_api_openapi_describes_the_filters(ada: APIClient) -> None:
    schema = ada.get("/api/schema/?format=json").json()
    params = {p["name"] for p in schema["paths"]["/api/runs/"]["get"]["parameters"]}
    assert {"status", "workflow", "created_after", "finished_before", "owner", "parent"} <= params
    assert {"forked_from", "search.{name}", "task", "app_version"} <= params
    assert "search" in schema["components"]["schemas"]["StartRun"]["properties"]
    assert "search" in schema["components"]["schemas"]["RunDetail"]["properties"]


def test_search_api_app_version_filter(ada: APIClient, orders: list[str]) -> None:
    Run.objects.filter(id=orders[1]).update(app_version="v-old")
    listed = ada.get("/api/runs/?app_version=v-old").json()["results"]
    assert [(r["id"], r["app_version"]) for r in listed] == [(orders[1], "v-old")]
    both = ada.get("/api/runs/?app_version=v-old&search.customer=7").json()["results"]
    assert both == []
