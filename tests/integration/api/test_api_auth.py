"""Authentication on every endpoint: token or session; the callback token is its own."""

from __future__ import annotations

import json

import api_flows  # noqa: F401  (registers the workflows)
import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

# No such run; fixed, not random, so that every pytest-xdist worker collects the same test ids.
RUN = "6f1c2a9e-4d3b-4a57-9e0f-2b8d7c5a1e34"
PROTECTED = [
    ("get", "/api/runs/"),
    ("post", "/api/runs/"),
    ("get", f"/api/runs/{RUN}/"),
    ("get", f"/api/runs/{RUN}/steps/"),
    ("get", f"/api/runs/{RUN}/events/"),
    ("post", f"/api/runs/{RUN}/cancel/"),
    ("get", "/api/workflows/"),
    ("get", "/api/schema/"),
    ("get", "/api/docs/"),
]


@pytest.mark.parametrize(("method", "url"), PROTECTED)
def test_api_auth_required_without_credentials_is_401(
    anon: APIClient, method: str, url: str
) -> None:
    response = getattr(anon, method)(url)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"
    assert response.headers["WWW-Authenticate"].startswith("Token")


@pytest.mark.parametrize(("method", "url"), PROTECTED)
def test_api_auth_bad_token_is_401(anon: APIClient, method: str, url: str) -> None:
    anon.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
    response = getattr(anon, method)(url)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "authentication_failed"


def test_api_auth_token_reaches_every_endpoint(client: APIClient) -> None:
    assert client.get("/api/runs/").status_code == 200
    assert client.get("/api/workflows/").status_code == 200
    assert client.get(f"/api/runs/{RUN}/").status_code == 404
    schema = client.get("/api/schema/")
    assert schema.status_code == 200
    assert schema.headers["Content-Type"].startswith("application/vnd.oai.openapi+json")
    assert "/api/callbacks/{token}/" in schema.json()["paths"]
    docs = client.get("/api/docs/", HTTP_ACCEPT="text/html")
    assert docs.status_code == 200
    assert b"swagger" in docs.content.lower()


def test_api_auth_session_works_with_csrf(user: User, enqueued: list) -> None:
    session = APIClient(enforce_csrf_checks=True)
    session.login(username="ada", password="pw-ada-123")
    assert session.get("/api/runs/").status_code == 200
    body = json.dumps({"workflow": "tests.api.double", "args": [1]})
    refused = session.post("/api/runs/", body, content_type="application/json")
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "permission_denied"
    assert "CSRF" in refused.json()["error"]["message"]
    session.get("/admin/login/")  # sets the csrftoken cookie
    csrf = session.cookies["csrftoken"].value
    accepted = session.post(
        "/api/runs/", body, content_type="application/json", HTTP_X_CSRFTOKEN=csrf
    )
    assert accepted.status_code == 201


def test_api_auth_callback_endpoint_needs_no_user(anon: APIClient) -> None:
    response = anon.post(
        "/api/callbacks/unknown/", json.dumps({"result": 1}), content_type="application/json"
    )
    assert response.status_code == 404  # reached the endpoint: the token is the credential
