"""POST /api/runs/{id}/fork/ and /retry/: 201 with the new run, every error in the envelope."""

from __future__ import annotations

from typing import Any

import operate_workflows as flows
import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from runtime.executor import execute
from runtime.models import Run
from runtime.services import start_run
from runtime.testing import InMemoryDispatcher
from tests.support.users import operator

UNKNOWN = "00000000-0000-0000-0000-000000000000"


@pytest.fixture
def client() -> APIClient:
    user = operator("ada", password="pw-ada-123")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return api


def _finished(dispatcher: InMemoryDispatcher, workflow: str, *args: Any) -> Run:
    run, _ = start_run(workflow, list(args))
    dispatcher.join()
    return run


def _error(response: Any, status: int, code: str) -> str:
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == {"error"} and body["error"]["code"] == code
    return str(body["error"]["message"])


def test_api_fork_returns_201_with_the_new_run_linked_both_ways(
    client: APIClient, dispatcher: InMemoryDispatcher
) -> None:
    source = _finished(dispatcher, "tests.operate.three")
    response = client.post(
        f"/api/runs/{source.id}/fork/", {"from_position": 2, "args": ["n-"]}, format="json"
    )
    assert response.status_code == 201
    body = response.json()
    assert body["status"] == "pending" and body["args"] == ["n-"]
    assert (body["forked_from"], body["forked_from_position"]) == (str(source.id), 2)
    dispatcher.join()
    assert client.get(f"/api/runs/{body['id']}/").json()["result"] == ["A", "N-B", "N-C"]
    assert client.get(f"/api/runs/{source.id}/").json()["forks"] == [body["id"]]


def test_api_retry_forks_from_the_failed_step(
    client: APIClient, dispatcher: InMemoryDispatcher
) -> None:
    flows.FAIL.add("c")
    source = _finished(dispatcher, "tests.operate.three")
    flows.FAIL.clear()
    response = client.post(f"/api/runs/{source.id}/retry/")
    assert response.status_code == 201
    assert response.json()["forked_from_position"] == 3
    dispatcher.join()
    assert Run.objects.get(id=response.json()["id"]).status == "completed"


def test_api_fork_and_retry_errors_use_the_envelope(
    client: APIClient, dispatcher: InMemoryDispatcher
) -> None:
    source = _finished(dispatcher, "tests.operate.three")
    fork = f"/api/runs/{source.id}/fork/"
    assert "between 1 and 4" in _error(
        client.post(fork, {"from_position": 9}, format="json"), 400, "position_out_of_range"
    )
    _error(client.post(fork, {"from_position": 0}, format="json"), 400, "position_out_of_range")
    _error(client.post(fork, {}, format="json"), 400, "invalid")
    _error(client.post(fork, {"from_position": "two"}, format="json"), 400, "invalid")
    _error(client.post(fork, {"from_position": 1, "args": 3}, format="json"), 400, "invalid")
    _error(
        client.post(fork, {"from_position": 1, "args": [1, 2, 3]}, format="json"),
        400,
        "invalid_arguments",
    )
    for path in (f"/api/runs/{UNKNOWN}/fork/", "/api/runs/not-a-run/fork/"):
        _error(client.post(path, {"from_position": 1}, format="json"), 404, "not_found")
    _error(client.post(f"/api/runs/{UNKNOWN}/retry/"), 404, "not_found")
    _error(client.post(f"/api/runs/{source.id}/retry/"), 409, "nothing_to_retry")
    _error(APIClient().post(fork, {"from_position": 1}, format="json"), 401, "not_authenticated")
    assert Run.objects.count() == 1  # no error left a run behind


def test_api_fork_of_a_running_source_is_allowed_up_to_its_first_unfinished_step(
    client: APIClient, dispatcher: InMemoryDispatcher
) -> None:
    source, _ = start_run("tests.operate.waits")
    execute(source.id)  # step a done, the callback at position 2 still open
    fork = f"/api/runs/{source.id}/fork/"
    message = _error(
        client.post(fork, {"from_position": 3}, format="json"), 409, "position_unfinished"
    )
    assert "position 2" in message
    assert client.post(fork, {"from_position": 2}, format="json").status_code == 201


def test_api_retry_of_a_running_source_without_a_failure_is_409(
    client: APIClient, dispatcher: InMemoryDispatcher
) -> None:
    source, _ = start_run("tests.operate.waits")
    execute(source.id)
    _error(client.post(f"/api/runs/{source.id}/retry/"), 409, "nothing_to_retry")
    pending, _ = start_run("tests.operate.three")  # nothing recorded yet: only position 1
    fork = f"/api/runs/{pending.id}/fork/"
    _error(client.post(fork, {"from_position": 2}, format="json"), 400, "position_out_of_range")
    assert client.post(fork, {"from_position": 1}, format="json").status_code == 201


def test_api_schema_documents_fork_and_retry(client: APIClient) -> None:
    paths = client.get("/api/schema/").json()["paths"]
    fork = paths["/api/runs/{run_id}/fork/"]["post"]
    assert {"201", "400", "404", "409"} <= set(fork["responses"])
    assert {"201", "404", "409"} <= set(paths["/api/runs/{run_id}/retry/"]["post"]["responses"])
