"""GET /api/runs/, /api/runs/{id}/, its steps and its events."""

from __future__ import annotations

import json
import uuid
from typing import Any

import api_flows  # noqa: F401  (registers the workflows)
import pytest
from rest_framework.test import APIClient

from runtime.core.clock import FakeClock
from runtime.executor import execute


def start(client: APIClient, workflow: str, *args: Any, key: str | None = None) -> str:
    body: dict[str, Any] = {"workflow": workflow, "args": list(args)}
    if key:
        body["idempotency_key"] = key
    response = client.post("/api/runs/", json.dumps(body), content_type="application/json")
    assert response.status_code == 201, response.content
    return str(response.json()["id"])


def test_api_runs_list_newest_first_with_cursor(client: APIClient) -> None:
    ids = [start(client, "tests.api.double", n) for n in range(5)]
    first = client.get("/api/runs/?page_size=2").json()
    assert [r["id"] for r in first["results"]] == ids[::-1][:2]
    second = client.get(first["next"]).json()
    assert [r["id"] for r in second["results"]] == ids[::-1][2:4]
    third = client.get(second["next"]).json()
    assert [r["id"] for r in third["results"]] == ids[:1]
    assert third["next"] is None


def test_api_runs_list_filters_status_and_workflow(client: APIClient, clock: FakeClock) -> None:
    done = start(client, "tests.api.double", 1)
    start(client, "tests.api.double", 2)
    other = start(client, "tests.api.sleeper")
    execute(uuid.UUID(done), clock=clock)
    completed = client.get("/api/runs/?status=completed").json()["results"]
    assert [r["id"] for r in completed] == [done]
    sleepers = client.get("/api/runs/?workflow=tests.api.sleeper").json()["results"]
    assert [r["id"] for r in sleepers] == [other]


@pytest.mark.parametrize(
    "query",
    [
        "status=bogus",
        "cursor=nonsense",
        "cursor=cD1ub3RhZGF0ZQ==",  # p=notadate: a well-formed cursor at a forged position
        "cursor=cD0yMDI2LTEzLTQwVDAwOjAwOjAwWg==",  # p=2026-13-40T00:00:00Z
        "cursor=AAAA",  # junk that decodes to no offset, direction or position
        "cursor=====",
        "cursor=%00",
        "workflow=" + "w" * 201,
    ],
)
def test_api_runs_list_bad_query_is_400(client: APIClient, query: str) -> None:
    response = client.get(f"/api/runs/?{query}")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid"


def test_api_run_detail_has_result_and_step_counts(client: APIClient, clock: FakeClock) -> None:
    run_id = start(client, "tests.api.double", 21)
    execute(uuid.UUID(run_id), clock=clock)
    body = client.get(f"/api/runs/{run_id}/").json()
    assert body["status"] == "completed"
    assert body["result"] == {"label": "x", "value": 42}
    assert body["error"] is None
    assert body["step_counts"] == {
        "pending": 0,
        "running": 0,
        "completed": 1,
        "failed": 0,
        "cancelled": 0,
    }


def test_api_run_detail_of_failed_run_has_error(client: APIClient, clock: FakeClock) -> None:
    run_id = start(client, "tests.api.broken")
    for _ in range(5):  # retries suspend; each execution moves the clock past the delay
        execute(uuid.UUID(run_id), clock=clock)
        clock.advance(120)
    body = client.get(f"/api/runs/{run_id}/").json()
    assert body["status"] == "failed"
    assert body["error"]["type"] == "StepFailed"
    assert body["step_counts"]["failed"] == 1


@pytest.mark.parametrize("suffix", ["", "steps/", "events/", "cancel/"])
@pytest.mark.parametrize("run_id", ["6f1c2a9e-4d3b-4a57-9e0f-2b8d7c5a1e34", "not-a-uuid", "1"])
def test_api_run_unknown_or_malformed_id_is_404(
    client: APIClient, suffix: str, run_id: str
) -> None:
    url = f"/api/runs/{run_id}/{suffix}"
    response = client.post(url) if suffix == "cancel/" else client.get(url)
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_api_run_steps_in_position_order(client: APIClient, clock: FakeClock) -> None:
    run_id = start(client, "tests.api.sleeper")
    execute(uuid.UUID(run_id), clock=clock)
    body = client.get(f"/api/runs/{run_id}/steps/?include=result").json()
    steps = body["results"]
    assert [(s["position"], s["kind"], s["status"]) for s in steps] == [
        (1, "step", "completed"),
        (2, "sleep", "waiting"),  # an open wait reads as its run does
    ]
    assert steps[0]["result"] == 2
    assert body["next"] is None
    assert client.get(f"/api/runs/{run_id}/steps/?after=1").json()["results"][0]["position"] == 2


def test_api_run_events_tail_after_seq(client: APIClient, clock: FakeClock) -> None:
    run_id = start(client, "tests.api.sleeper")
    execute(uuid.UUID(run_id), clock=clock)
    events = client.get(f"/api/runs/{run_id}/events/").json()["results"]
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(1, len(seqs) + 1))
    assert events[0]["type"] == "run_created"
    page = client.get(f"/api/runs/{run_id}/events/?after=1&limit=2").json()
    assert [e["seq"] for e in page["results"]] == [2, 3]
    assert "after=3" in page["next"]
    clock.advance(3601)
    execute(uuid.UUID(run_id), clock=clock)
    tail = client.get(f"/api/runs/{run_id}/events/?after={seqs[-1]}").json()["results"]
    assert [e["type"] for e in tail][-1] == "run_completed"
    assert tail[0]["seq"] == seqs[-1] + 1


@pytest.mark.parametrize("query", ["after=-1", "after=x", "limit=0", "limit=5000"])
def test_api_run_events_bad_after_or_limit_is_400(client: APIClient, query: str) -> None:
    run_id = start(client, "tests.api.double", 1)
    response = client.get(f"/api/runs/{run_id}/events/?{query}")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid"


def test_api_workflows_lists_registered_workflows(client: APIClient) -> None:
    workflows = {w["name"]: w for w in client.get("/api/workflows/").json()}
    double = workflows["tests.api.double"]
    assert double["description"] == "Doubles n in one step."
    assert double["parameters"] == [
        {"name": "n", "kind": "positional", "required": True},
        {"name": "label", "kind": "keyword", "required": False},
    ]
