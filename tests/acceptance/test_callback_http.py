"""A callback round trip through HTTP with a real worker process: start over the API, the
run parks on its callback (no worker held), the token is posted over the API, the worker
resumes the run to completion."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

import tests.acceptance.callback_http_flows  # noqa: F401  (registers the workflow here too)
from runtime.testing import callback_token
from tests.support.users import operator
from tests.support.waiting import wait_until
from tests.support.workers import running_worker

MODULE = "tests.acceptance.callback_http_flows"


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

        wait_until(lambda: client.get(run_url).json()["status"] == "waiting", 30, interval=0.1)
        token = callback_token(started.json()["id"])

        posted = APIClient().post(
            f"/api/callbacks/{token}/",
            json.dumps({"result": "approved"}),
            content_type="application/json",
        )
        assert posted.status_code == 200

        run = wait_until(
            lambda: (r := client.get(run_url).json())["status"] == "completed" and r,
            30,
            interval=0.1,
        )
        assert run["result"] == {"order": "o-42", "decision": "approved"}
        again = APIClient().post(
            f"/api/callbacks/{token}/",
            json.dumps({"result": "twice"}),
            content_type="application/json",
        )
        assert again.status_code == 409
