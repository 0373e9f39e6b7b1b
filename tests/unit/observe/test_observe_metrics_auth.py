"""Who may read /metrics: the bearer token compared as bytes, whatever the header holds."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import RequestFactory

from runtime.observe.web import allowed, metrics_view


@pytest.fixture
def metrics_token(fanfold_settings: Any) -> str:
    fanfold_settings(METRICS_TOKEN="s3cret-token")
    return "s3cret-token"


def test_observe_metrics_auth_accepts_the_token(metrics_token: str) -> None:
    request = RequestFactory().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {metrics_token}")
    assert allowed(request)


@pytest.mark.parametrize(
    "header", ["Bearer \u00e9", "Bearer s3cret-t\u00f6ken", "Bearer \u2603\u0000", "Basic x", ""]
)
def test_observe_metrics_auth_refuses_other_headers_with_401(
    metrics_token: str, header: str
) -> None:
    request = RequestFactory().get("/metrics", HTTP_AUTHORIZATION=header)
    response = metrics_view(request)
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_observe_metrics_auth_refuses_any_token_when_none_is_set() -> None:
    request = RequestFactory().get("/metrics", HTTP_AUTHORIZATION="Bearer \u00e9")
    assert not allowed(request)
