"""POST /api/runs/: starting runs, idempotency and every way the input can be wrong."""

from __future__ import annotations

import json
from typing import Any

import api_flows  # noqa: F401  (registers the workflows)
import pytest
from rest_framework.test import APIClient

from runtime.models import Event, Run

URL = "/api/runs/"


def post(client: APIClient, body: Any, **extra: Any) -> Any:
    return client.post(URL, json.dumps(body), content_type="application/json", **extra)


def assert_error(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.content
    error = response.json()["error"]
    assert error["code"] == code
    assert error["message"]
    return error


def test_api_start_creates_run_and_enqueues(client: APIClient, enqueued: list) -> None:
    response = post(
        client, {"workflow": "tests.api.double", "args": [21], "kwargs": {"label": "a"}}
    )
    assert response.status_code == 201
    body = response.json()
    assert body["workflow"] == "tests.api.double"
    assert body["status"] == "pending"
    assert body["args"] == [21]
    assert body["kwargs"] == {"label": "a"}
    assert body["step_counts"]["completed"] == 0
    assert [str(run_id) for run_id, _ in enqueued] == [body["id"]]
    assert Event.objects.filter(run_id=body["id"], type="run_created").count() == 1


def test_api_start_repeated_idempotency_key_returns_existing_run(client: APIClient) -> None:
    first = post(client, {"workflow": "tests.api.double", "args": [1], "idempotency_key": "k-1"})
    again = post(client, {"workflow": "tests.api.double", "args": [1], "idempotency_key": "k-1"})
    assert first.status_code == 201
    assert again.status_code == 200
    assert again.json()["id"] == first.json()["id"]
    assert again.json()["args"] == [1]
    assert Run.objects.count() == 1


def test_api_start_repeated_idempotency_key_with_other_arguments_is_409(
    client: APIClient,
) -> None:
    post(client, {"workflow": "tests.api.double", "args": [1], "idempotency_key": "k-1"})
    again = post(client, {"workflow": "tests.api.double", "args": [2], "idempotency_key": "k-1"})
    assert_error(again, 409, "idempotency_conflict")
    assert Run.objects.count() == 1


@pytest.mark.parametrize("key", ["ff-child:x:1", "ff-debounce:k", "schedule:tests.api.double:t"])
def test_api_start_refuses_keys_of_the_runtime_namespace(client: APIClient, key: str) -> None:
    refused = post(client, {"workflow": "tests.api.double", "args": [1], "idempotency_key": key})
    assert_error(refused, 400, "reserved_idempotency_key")
    assert Run.objects.count() == 0


def test_api_start_unknown_workflow_is_400(client: APIClient) -> None:
    error = assert_error(post(client, {"workflow": "tests.api.nope"}), 400, "unknown_workflow")
    assert "tests.api.nope" in error["message"]
    assert Run.objects.count() == 0


def test_api_start_arguments_not_fitting_signature_is_400(client: APIClient) -> None:
    error = assert_error(
        post(client, {"workflow": "tests.api.double", "args": [1, 2]}), 400, "invalid_arguments"
    )
    assert "tests.api.double" in error["message"]
    assert_error(
        post(client, {"workflow": "tests.api.double", "kwargs": {"n": 1, "bogus": 2}}),
        400,
        "invalid_arguments",
    )
    assert Run.objects.count() == 0


def test_api_start_wrong_shapes_are_400_with_field_messages(client: APIClient) -> None:
    error = assert_error(
        post(client, {"workflow": "tests.api.double", "args": "1"}), 400, "invalid"
    )
    assert error["message"].startswith("args:")
    assert "args" in error["fields"]
    assert_error(post(client, {"workflow": "tests.api.double", "kwargs": [1]}), 400, "invalid")
    assert_error(post(client, {"args": [1]}), 400, "invalid")
    assert_error(post(client, [1, 2]), 400, "invalid")
    assert_error(
        post(client, {"workflow": "tests.api.double", "idempotency_key": ""}), 400, "invalid"
    )
    assert_error(
        post(client, {"workflow": "tests.api.double", "idempotency_key": "k" * 256}), 400, "invalid"
    )
    assert Run.objects.count() == 0


def test_api_start_malformed_json_is_400(client: APIClient) -> None:
    response = client.post(URL, "{not json", content_type="application/json")
    assert_error(response, 400, "parse_error")
    response = client.post(URL, '{"workflow": NaN}', content_type="application/json")
    assert_error(response, 400, "parse_error")


def test_api_start_other_media_type_is_415(client: APIClient) -> None:
    response = client.post(URL, "workflow=x", content_type="application/x-www-form-urlencoded")
    assert_error(response, 415, "unsupported_media_type")


def test_api_start_body_over_limit_is_413(client: APIClient, small_payloads: int) -> None:
    body = {"workflow": "tests.api.double", "args": ["x" * small_payloads]}
    error = assert_error(post(client, body), 413, "payload_too_large")
    assert str(small_payloads) in error["message"]
    assert Run.objects.count() == 0
