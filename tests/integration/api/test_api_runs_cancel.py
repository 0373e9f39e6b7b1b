"""POST /api/runs/{id}/cancel/."""

from __future__ import annotations

import json
import uuid

import api_flows  # noqa: F401  (registers the workflows)
from rest_framework.test import APIClient

from runtime.core.clock import FakeClock
from runtime.executor import ExecutionOutcome, execute
from runtime.models import Event, Step


def start(client: APIClient, workflow: str) -> uuid.UUID:
    body = {"workflow": workflow, "args": [1] if workflow == "tests.api.double" else []}
    response = client.post("/api/runs/", json.dumps(body), content_type="application/json")
    return uuid.UUID(response.json()["id"])


def test_api_cancel_sleeping_run_stops_it_at_once(client: APIClient, clock: FakeClock) -> None:
    run_id = start(client, "tests.api.sleeper")
    assert execute(run_id, clock=clock).outcome is ExecutionOutcome.SUSPENDED
    response = client.post(f"/api/runs/{run_id}/cancel/")
    assert response.status_code == 200
    assert response.json()["status"] == "cancelled"
    assert response.json()["step_counts"]["cancelled"] == 1
    assert Step.objects.get(run_id=run_id, kind="sleep").status == "cancelled"
    clock.advance(7200)
    assert execute(run_id, clock=clock).outcome is ExecutionOutcome.SKIPPED
    assert Event.objects.filter(run_id=run_id).last().type == "run_cancelled"


def test_api_cancel_pending_run(client: APIClient, clock: FakeClock) -> None:
    run_id = start(client, "tests.api.double")
    assert client.post(f"/api/runs/{run_id}/cancel/").status_code == 200
    assert execute(run_id, clock=clock).outcome is ExecutionOutcome.SKIPPED


def test_api_cancel_finished_run_is_409(client: APIClient, clock: FakeClock) -> None:
    run_id = start(client, "tests.api.double")
    execute(run_id, clock=clock)
    response = client.post(f"/api/runs/{run_id}/cancel/")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "run_finished"
    again = client.get(f"/api/runs/{run_id}/").json()
    assert again["status"] == "completed"


def test_api_cancel_twice_is_409(client: APIClient) -> None:
    run_id = start(client, "tests.api.sleeper")
    assert client.post(f"/api/runs/{run_id}/cancel/").status_code == 200
    assert client.post(f"/api/runs/{run_id}/cancel/").status_code == 409
