"""Messages, values and signals over the API: status codes, the error envelope, bad input."""

from __future__ import annotations

import uuid
from typing import Any

import api_flows  # noqa: F401  (registers the workflows)
from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from runtime.executor import ExecutionOutcome, execute
from runtime.models import Event, Message, Run, RunStatus, RunValue
from runtime.services import start_run
from tests.support.users import grant, starter


def _run(status: str = RunStatus.WAITING) -> Run:
    run, _ = start_run("tests.api.sleeper", [5])
    Run.objects.filter(id=run.id).update(status=status)
    return run


def _code(response: Any) -> str:
    return str(response.json()["error"]["code"])


def test_api_messages_send_and_repeat(client: APIClient) -> None:
    run = _run()
    url = f"/api/runs/{run.id}/messages/"
    body = {"topic": "approval", "value": {"by": "ana"}, "idempotency_key": "m1"}
    first = client.post(url, body, format="json")
    again = client.post(url, body, format="json")
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["id"] == again.json()["id"]
    assert Message.objects.filter(run_id=run.id).count() == 1


def test_api_messages_refuse_unknown_finished_large_and_malformed(client: APIClient) -> None:
    unknown = client.post(f"/api/runs/{uuid.uuid4()}/messages/", {"topic": "t", "value": 1},
                          format="json")  # fmt: skip
    assert (unknown.status_code, _code(unknown)) == (404, "not_found")
    garbage = client.post("/api/runs/nope/messages/", {"topic": "t", "value": 1}, format="json")
    assert garbage.status_code == 404
    done = _run(RunStatus.COMPLETED)
    finished = client.post(f"/api/runs/{done.id}/messages/", {"topic": "t", "value": 1},
                           format="json")  # fmt: skip
    assert (finished.status_code, _code(finished)) == (409, "run_finished")
    run = _run()
    value = "x" * (1024 * 1024 + 10)
    big = client.post(f"/api/runs/{run.id}/messages/", {"topic": "t", "value": value},
                      format="json")  # fmt: skip
    assert big.status_code == 413
    no_topic = client.post(f"/api/runs/{run.id}/messages/", {"value": 1}, format="json")
    assert no_topic.status_code == 400
    nul = client.post(f"/api/runs/{run.id}/messages/", {"topic": "a\u0000", "value": 1},
                      format="json")  # fmt: skip
    assert nul.status_code == 400


def test_api_values_read_wait_and_404(client: APIClient) -> None:
    run = _run()
    missing = client.get(f"/api/runs/{run.id}/values/progress/")
    assert (missing.status_code, _code(missing)) == (404, "value_not_found")
    waited = client.get(f"/api/runs/{run.id}/values/progress/?wait=0.1")
    assert waited.status_code == 404
    RunValue.objects.create(run_id=run.id, key="progress", value={"done": 1}, position=1,
                            updated_at=run.created_at)  # fmt: skip
    found = client.get(f"/api/runs/{run.id}/values/progress/?wait=5")
    assert found.json() == {"key": "progress", "value": {"done": 1}}
    assert client.get(f"/api/runs/{run.id}/values/progress/?wait=-1").status_code == 400
    assert client.get(f"/api/runs/{run.id}/values/progress/?wait=abc").status_code == 400
    assert client.get(f"/api/runs/{uuid.uuid4()}/values/progress/").status_code == 404


def test_api_signals_emit_and_refuse_bad_input(client: APIClient, anon: APIClient) -> None:
    ok = client.post("/api/signals/", {"name": "payment.settled", "payload": {"order_id": "1"}},
                     format="json")  # fmt: skip
    assert ok.status_code == 202
    assert ok.json()["delivered"] == 0
    assert client.post("/api/signals/", {"payload": {}}, format="json").status_code == 400
    deep = '{"name": "n", "payload": ' + "[" * 5000 + "]" * 5000 + "}"
    nested = client.post("/api/signals/", deep, content_type="application/json")
    assert 400 <= nested.status_code < 500
    assert anon.post("/api/signals/", {"name": "n", "payload": 1}, format="json").status_code in (
        401,
        403,
    )


def test_api_messaging_refuses_lone_surrogates_in_names_and_keys(client: APIClient) -> None:
    run = _run()
    bodies = [
        (f"/api/runs/{run.id}/messages/", '{"topic": "\\ud800", "value": 1}'),
        (
            f"/api/runs/{run.id}/messages/",
            '{"topic": "t", "value": 1, "idempotency_key": "\\udfff"}',
        ),
        ("/api/signals/", '{"name": "\\ud800", "payload": {}}'),
        ("/api/signals/", '{"name": "n", "payload": {}, "idempotency_key": "\\ud800"}'),
        ("/api/signals/", '{"name": "n", "payload": {"\\ud800": 1}}'),
    ]
    for url, body in bodies:
        response = client.post(url, body, content_type="application/json")
        assert response.status_code == 400, (body, response.content)
        assert "code" in response.json()["error"]
    assert not Message.objects.filter(run_id=run.id).exists()


def test_api_messaging_another_users_run_is_not_found_and_signals_need_change_run(
    client: APIClient,
) -> None:
    run = _run()
    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=starter('bo')).key}")
    sent = other.post(f"/api/runs/{run.id}/messages/", {"topic": "t", "value": 1}, format="json")
    assert (sent.status_code, _code(sent)) == (404, "not_found")
    assert other.get(f"/api/runs/{run.id}/values/progress/").status_code == 404
    emitted = other.post("/api/signals/", {"name": "n", "payload": {}}, format="json")
    assert (emitted.status_code, _code(emitted)) == (403, "permission_denied")
    assert not Message.objects.filter(run_id=run.id).exists()


def test_api_messaging_a_viewer_is_told_that_sending_needs_change_rights(
    client: APIClient,
) -> None:
    run = _run()
    viewer = APIClient()
    user = grant(starter("vi"), "view_run")
    viewer.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    sent = viewer.post(f"/api/runs/{run.id}/messages/", {"topic": "t", "value": 1}, format="json")
    assert (sent.status_code, _code(sent)) == (403, "permission_denied")
    message = sent.json()["error"]["message"]
    assert message == f"sending messages to run {run.id} needs its owner or runtime.change_run"
    assert not Message.objects.filter(run_id=run.id).exists()


def test_api_messaging_the_log_names_who_sent_and_who_emitted(client: APIClient) -> None:
    run, _ = start_run("tests.api.receiver")
    assert execute(run.id).outcome is ExecutionOutcome.SUSPENDED
    sent = client.post(f"/api/runs/{run.id}/messages/", {"topic": "approval", "value": "yes"},
                       format="json")  # fmt: skip
    assert sent.status_code == 201
    assert execute(run.id).outcome is ExecutionOutcome.SUSPENDED  # now waits for the signal
    paid = {"name": "tests.api.paid", "payload": {"order": "o-1", "amount": 3}}
    assert client.post("/api/signals/", paid, format="json").json()["delivered"] == 1
    assert execute(run.id).outcome is ExecutionOutcome.COMPLETED
    by = {"user_id": User.objects.get(username="ada").pk, "username": "ada"}
    received = {
        e.type: e.payload
        for e in Event.objects.filter(run_id=run.id, type__in=["message_received",
                                                               "signal_received"])
    }  # fmt: skip
    assert received["message_received"]["by"] == by
    assert received["signal_received"]["by"] == by
    assert Run.objects.get(id=run.id).result == {
        "message": "yes", "paid": {"order": "o-1", "amount": 3}
    }  # fmt: skip
