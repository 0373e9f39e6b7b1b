"""Attacks on callback tokens: bob cannot read alice's token, and tokens stay out of logs.

A token is stored as its SHA-256 only; its run's owner (and viewers) read it from the run's
steps; it may be posted in the body or a Bearer header of POST /api/callbacks/ (no token in
the URL, so none in access logs); a signed-in poster is recorded in the run's log.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from typing import Any

import api_flows  # noqa: F401  (registers the workflows)
import pytest
from api_security import client_of, post, start, users
from rest_framework.test import APIClient

from api.gunicorn_logging import TokenMaskingLogger
from api.log_masking import CallbackTokenFilter, mask_callback_tokens
from runtime.core.clock import FakeClock
from runtime.executor import ExecutionOutcome, execute
from runtime.models import Event, Step


@pytest.fixture
def approval(enqueued: list, clock: FakeClock) -> dict[str, Any]:
    """alice's run of tests.api.approval, waiting on its callback; bob, who may start runs."""
    alice, bob = users()
    alice_api = client_of(alice)
    run_id = uuid.UUID(start(alice_api, "tests.api.approval").json()["id"])
    assert execute(run_id, clock=clock).outcome is ExecutionOutcome.SUSPENDED
    return {"run": run_id, "alice": alice_api, "bob": client_of(bob)}


def _token_as_owner(api: APIClient, run_id: uuid.UUID) -> str:
    steps = api.get(f"/api/runs/{run_id}/steps/?include=input").json()["results"]
    (callback,) = [s for s in steps if s["kind"] == "callback"]
    return str(callback["callback_token"])


def test_api_security_anothers_callback_token_cannot_be_read(approval: dict[str, Any]) -> None:
    run_id = approval["run"]
    for path in ("steps/?include=input,result", "events/?include=payload", ""):
        response = approval["bob"].get(f"/api/runs/{run_id}/{path}")
        assert response.status_code == 404
    token = _token_as_owner(approval["alice"], run_id)
    assert len(token) >= 43
    for path in ("steps/?include=input,result", "events/?include=payload"):
        assert token not in approval["bob"].get(f"/api/runs/{run_id}/{path}").content.decode()
    assert Step.objects.get(run_id=run_id, kind="callback").status == "running"


def test_api_security_token_is_stored_as_its_digest_only(approval: dict[str, Any]) -> None:
    token = _token_as_owner(approval["alice"], approval["run"])
    stored = Step.objects.get(run_id=approval["run"], kind="callback").callback_token
    assert stored == hashlib.sha256(token.encode()).hexdigest()
    assert not Step.objects.filter(callback_token=token).exists()
    payloads = Event.objects.filter(run_id=approval["run"]).values_list("payload", flat=True)
    assert token not in repr(list(payloads))


def test_api_security_guessed_or_digest_tokens_complete_nothing(
    approval: dict[str, Any], anon: APIClient
) -> None:
    stored = Step.objects.get(run_id=approval["run"], kind="callback").callback_token
    for guess in (stored, "x" * 43):
        assert post(anon, "/api/callbacks/", {"token": guess, "result": 1}).status_code == 404
        assert post(anon, f"/api/callbacks/{guess}/", {"result": 1}).status_code == 404
    assert Step.objects.get(run_id=approval["run"], kind="callback").status == "running"


def test_api_security_token_posted_in_a_bearer_header(
    approval: dict[str, Any], anon: APIClient
) -> None:
    token = _token_as_owner(approval["alice"], approval["run"])
    posted = post(
        anon, "/api/callbacks/", {"result": {"ok": 1}}, HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    assert posted.status_code == 200, posted.content
    assert posted.json()["status"] == "completed"
    received = Event.objects.get(run_id=approval["run"], type="callback_received")
    assert "by" not in received.payload  # anonymous: the token alone


def test_api_security_token_in_the_body_and_the_poster_recorded(
    approval: dict[str, Any],
) -> None:
    token = _token_as_owner(approval["alice"], approval["run"])
    posted = post(approval["alice"], "/api/callbacks/", {"token": token, "error": {"type": "No"}})
    assert posted.status_code == 200, posted.content
    received = Event.objects.get(run_id=approval["run"], type="callback_received")
    assert received.payload["by"]["username"] == "alice"


def test_api_security_callback_post_without_a_token_is_400(anon: APIClient) -> None:
    missing = post(anon, "/api/callbacks/", {"result": 1})
    assert missing.status_code == 400
    assert missing.json()["error"]["code"] == "invalid"


def test_api_security_tokens_are_masked_in_logs() -> None:
    token = "AbC-123_xyz" * 4
    line = f'"POST /api/callbacks/{token}/ HTTP/1.1" 200'
    assert token not in mask_callback_tokens(line)
    assert "/api/callbacks/***/" in mask_callback_tokens(line)
    assert mask_callback_tokens("POST /api/callbacks/ 200") == "POST /api/callbacks/ 200"
    record = logging.LogRecord(
        "django.request", logging.WARNING, __file__, 1, "Conflict: %s",
        (f"/api/callbacks/{token}/",), None,
    )  # fmt: skip
    assert CallbackTokenFilter().filter(record)
    assert token not in record.getMessage()


def test_api_security_gunicorn_access_log_masks_tokens() -> None:
    token = "AbC-123_xyz" * 4
    environ = {
        "REQUEST_METHOD": "POST",
        "RAW_URI": f"/api/callbacks/{token}/",
        "PATH_INFO": f"/api/callbacks/{token}/",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "QUERY_STRING": "",
    }

    class Response:
        status = "200 OK"
        sent = 10
        headers: list[tuple[str, str]] = []

    class Request:
        headers = [("AUTHORIZATION", f"Bearer {token}")]

    class Took:
        seconds = 0
        microseconds = 1000

    logger = TokenMaskingLogger.__new__(TokenMaskingLogger)
    logger.cfg = None  # atoms() reads no configuration
    atoms = logger.atoms(Response(), Request(), environ, Took())
    assert token not in repr(atoms)
    assert atoms["{authorization}i"] == "***"
