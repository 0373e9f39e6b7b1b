"""POST /api/callbacks/{token}/: a waiting run, completed over HTTP."""

from __future__ import annotations

import json
import uuid
from typing import Any

import api_flows  # noqa: F401  (registers the workflows)
import pytest
from rest_framework.test import APIClient

from api.throttling import CallbackRateThrottle
from api.views.callbacks import CallbackView
from runtime.core.clock import FakeClock
from runtime.executor import ExecutionOutcome, execute
from runtime.models import Run, Step
from runtime.testing import callback_token


@pytest.fixture
def waiting(client: APIClient, clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> uuid.UUID:
    """A run of tests.api.approval parked on its callback (600 s timeout, 60 s heartbeat)."""
    monkeypatch.setattr(CallbackView, "clock", clock)
    body = {"workflow": "tests.api.approval"}
    response = client.post("/api/runs/", json.dumps(body), content_type="application/json")
    run_id = uuid.UUID(response.json()["id"])
    assert execute(run_id, clock=clock).outcome is ExecutionOutcome.SUSPENDED
    return run_id


def token_of(run_id: uuid.UUID) -> str:
    return callback_token(run_id)


def post(anon: APIClient, token: str, body: Any) -> Any:
    return anon.post(f"/api/callbacks/{token}/", json.dumps(body), content_type="application/json")


def test_api_callback_round_trip_completes_run(
    anon: APIClient, client: APIClient, waiting: uuid.UUID, clock: FakeClock, enqueued: list
) -> None:
    assert client.get(f"/api/runs/{waiting}/").json()["status"] == "waiting"
    enqueued.clear()
    response = post(anon, token_of(waiting), {"result": {"approved": True}})
    assert response.status_code == 200
    assert response.json() == {"callback": "approval", "status": "completed", "deadline": None}
    assert enqueued == [(waiting, None)]
    assert execute(waiting, clock=clock).outcome is ExecutionOutcome.COMPLETED
    run = client.get(f"/api/runs/{waiting}/").json()
    assert run["result"] == {"decision": {"approved": True}}
    types = [e["type"] for e in client.get(f"/api/runs/{waiting}/events/").json()["results"]]
    assert "callback_received" in types


def test_api_callback_second_result_is_409(anon: APIClient, waiting: uuid.UUID) -> None:
    token = token_of(waiting)
    assert post(anon, token, {"result": 1}).status_code == 200
    second = post(anon, token, {"result": 2})
    assert second.status_code == 409
    assert second.json()["error"]["code"] == "callback_completed"
    assert post(anon, token, {"error": {"type": "X", "message": "y"}}).status_code == 409
    assert Step.objects.get(run_id=waiting, kind="callback").result == 1


def test_api_callback_error_fails_the_wait(
    anon: APIClient, waiting: uuid.UUID, clock: FakeClock
) -> None:
    response = post(anon, token_of(waiting), {"error": {"type": "Rejected", "message": "no"}})
    assert response.json()["status"] == "failed"
    execute(waiting, clock=clock)
    run = Run.objects.get(id=waiting)
    assert run.status == "failed"
    assert run.error["type"] == "CallbackFailed"


def test_api_callback_heartbeat_keeps_run_waiting_past_heartbeat_timeout(
    anon: APIClient, waiting: uuid.UUID, clock: FakeClock
) -> None:
    token = token_of(waiting)
    for _ in range(3):
        clock.advance(50)
        response = post(anon, token, {"heartbeat": True})
        assert response.status_code == 200
        assert response.json()["status"] == "running"
        assert execute(waiting, clock=clock).outcome is ExecutionOutcome.SUSPENDED
    clock.advance(61)
    assert execute(waiting, clock=clock).outcome is ExecutionOutcome.FAILED
    assert Run.objects.get(id=waiting).error["type"] == "CallbackTimedOut"
    late = post(anon, token, {"result": "late"})
    assert late.status_code == 409
    assert late.json()["error"]["code"] == "run_finished"


def test_api_callback_timeout_fails_run(
    anon: APIClient, waiting: uuid.UUID, clock: FakeClock
) -> None:
    token = token_of(waiting)
    for _ in range(12):  # heartbeats every 50 s, yet the 600 s timeout still ends it
        clock.advance(50)
        post(anon, token, {"heartbeat": True})
        execute(waiting, clock=clock)
    run = Run.objects.get(id=waiting)
    assert run.status == "failed"
    assert "nothing was posted" in run.error["message"]


@pytest.mark.parametrize("token", ["no-such-token", "nul%00byte", "x" * 65])
def test_api_callback_unknown_token_is_404(anon: APIClient, token: str) -> None:
    response = post(anon, token, {"result": 1})
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "callback_not_found"


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"result": 1, "heartbeat": True},
        {"result": 1, "error": {"type": "X"}},
        {"heartbeat": False},
        {"error": {"message": "no type"}},
        {"error": "text"},
        [1],
    ],
)
def test_api_callback_malformed_body_is_400(anon: APIClient, waiting: uuid.UUID, body: Any) -> None:
    response = post(anon, token_of(waiting), body)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid"
    assert Step.objects.get(run_id=waiting, kind="callback").status == "running"


def test_api_callback_body_over_limit_is_413(
    anon: APIClient, waiting: uuid.UUID, small_payloads: int
) -> None:
    response = post(anon, token_of(waiting), {"result": "x" * small_payloads})
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"


def test_api_callback_is_throttled(
    anon: APIClient, waiting: uuid.UUID, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(CallbackRateThrottle, "THROTTLE_RATES", {"callbacks": "2/minute"})
    token = token_of(waiting)
    assert post(anon, token, {"heartbeat": True}).status_code == 200
    assert post(anon, token, {"heartbeat": True}).status_code == 200
    third = post(anon, token, {"heartbeat": True})
    assert third.status_code == 429
    assert third.json()["error"]["code"] == "throttled"
    assert "Retry-After" in third.headers
