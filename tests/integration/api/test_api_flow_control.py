"""Flow control through the API: schedules listed and paused, workflows' limits, starts with
a concurrency key and a priority."""

from __future__ import annotations

import json
from typing import Any

import api_flow_control  # noqa: F401  (registers the workflows)
from rest_framework.test import APIClient

from runtime.models import Run


def post(client: APIClient, url: str, body: Any = None) -> Any:
    return client.post(url, json.dumps(body or {}), content_type="application/json")


def test_api_schedules_lists_every_schedule_in_code(client: APIClient) -> None:
    response = client.get("/api/schedules/")
    assert response.status_code == 200
    rows = {row["workflow"]: row for row in response.json()}
    assert rows["tests.api.nightly"]["expression"] == "0 3 * * *"
    assert rows["tests.api.nightly"]["timezone"] == "Europe/Paris"
    assert rows["tests.api.hourly"]["kind"] == "interval"
    assert rows["tests.api.hourly"]["catchup"] == "all"
    assert rows["tests.api.hourly"]["paused"] is False


def test_api_schedules_pause_and_resume(client: APIClient) -> None:
    paused = post(client, "/api/schedules/tests.api.nightly/pause/")
    assert paused.status_code == 200 and paused.json()["paused"] is True
    resumed = post(client, "/api/schedules/tests.api.nightly/resume/")
    assert resumed.status_code == 200 and resumed.json()["paused"] is False


def test_api_schedules_unknown_one_is_404(client: APIClient) -> None:
    response = post(client, "/api/schedules/tests.api.limited/pause/")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "schedule_not_found"


def test_api_workflows_show_schedule_and_concurrency(client: APIClient) -> None:
    listed = {w["name"]: w for w in client.get("/api/workflows/").json()}
    assert listed["tests.api.limited"]["concurrency"] == 2
    assert listed["tests.api.limited"]["schedule"] is None
    assert listed["tests.api.nightly"]["schedule"] == {
        "kind": "cron",
        "expression": "0 3 * * *",
        "timezone": "Europe/Paris",
        "catchup": "skip",
    }


def test_api_start_takes_a_concurrency_key_and_priority(client: APIClient) -> None:
    body = {"workflow": "tests.api.limited", "args": ["c-1"], "concurrency_key": "c-1"}
    response = post(client, "/api/runs/", {**body, "priority": 7})
    assert response.status_code == 201, response.content
    assert (response.json()["priority"], response.json()["concurrency_key"]) == (7, "c-1")
    run = Run.objects.get(id=response.json()["id"])
    assert (run.priority, run.concurrency_key, run.admitted) == (7, "c-1", True)


def test_api_start_rejects_a_bad_priority_or_a_key_without_a_limit(client: APIClient) -> None:
    bad = post(
        client, "/api/runs/", {"workflow": "tests.api.limited", "args": ["x"], "priority": 12}
    )
    assert bad.status_code == 400
    keyed = post(client, "/api/runs/", {"workflow": "tests.api.nightly", "concurrency_key": "k"})
    assert keyed.status_code == 400
    assert keyed.json()["error"]["code"] == "invalid_arguments"


def test_api_schedules_a_name_with_nul_is_404_not_500(client: APIClient) -> None:
    response = post(client, "/api/schedules/bad%00name/pause/")
    assert response.status_code == 404
