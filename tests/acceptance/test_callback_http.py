"""A callback round trip through HTTP with a real worker process: start over the API, the
run parks on its callback (no worker held), the token is posted over the API, the worker
resumes the run to completion."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

import tests.acceptance.callback_http_flows  # noqa: F401  (registers the workflow here too)
from runtime.testing import callback_token
from tests.support.users import operator
from tests.support.workers import running_worker

MODULE = "tests.acceptance.callback_http_flows"


def eventually(probe: Callable[[], Any], timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.1)
    raise TimeoutError(f"nothing after {timeout} s")


@pytest.fixture
def client(transactional_db: Any) -> APIClient:
    user = operator("grace")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return api


def test_callback_http_round_trip_with_real_worker(client: APIClient, counters_redis: Any) -> None:
    with running_worker("callbacks", FANFOLD_WORKFLOW_MODULES=MODULE):
        body = {"workflow": "tests.http.approval", "args": ["o-42"]}
        started = client.post("/api/runs/", json.dumps(body), content_type="application/json")
        assert started.status_code == 201
        run_url = f"/api/runs/{started.json()['id']}/"

        eventually(lambda: client.get(run_url).json()["status"] == "waiting")
        token = callback_token(started.json()["id"])

        posted = APIClient().post(
            f"/api/callbacks/{token}/",
            json.dumps({"result": "approved"}),
            content_type="application/json",
        )
        assert posted.status_code == 200

        run = eventually(lambda: (r := client.get(run_url).json())["status"] == "completed" and r)
        assert run["result"] == {"order": "o-42", "decision": "approved"}
        again = APIClient().post(
            f"/api/callbacks/{token}/",
            json.dumps({"result": "twice"}),
            content_type="application/json",
        )
        assert again.status_code == 409
