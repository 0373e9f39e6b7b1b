"""The error envelope on DRF's own errors and on paths no endpoint serves."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("delete", "/api/runs/"),
        ("put", "/api/workflows/"),
        ("get", "/api/callbacks/some-token/"),
        ("get", "/api/runs/00000000-0000-0000-0000-000000000000/cancel/"),
    ],
)
def test_api_errors_method_not_allowed_is_405(client: APIClient, method: str, url: str) -> None:
    response = getattr(client, method)(url)
    assert response.status_code == 405
    assert response.json()["error"]["code"] == "method_not_allowed"


def test_api_errors_unknown_path_is_404_envelope(anon: APIClient) -> None:
    response = anon.get("/api/nothing/here/")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_api_errors_missing_slash_hints_the_endpoint(client: APIClient) -> None:
    response = client.post("/api/runs", "{}", content_type="application/json")
    assert response.status_code == 404
    assert "did you mean /api/runs/" in response.json()["error"]["message"]


def test_api_errors_schema_errors_are_json_even_for_yaml(anon: APIClient) -> None:
    response = anon.get("/api/schema/?format=yaml")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"
