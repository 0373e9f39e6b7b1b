"""Schemathesis against /api/schema/: generated requests never get a 5xx, and every response
matches the documented status codes, content types and bodies."""

from __future__ import annotations

import json
from typing import Any

import api_flows  # noqa: F401  (registers the workflows)
import schemathesis
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from config.wsgi import application

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


def _document() -> dict[str, Any]:
    # The same document /api/schema/ serves (asserted below); built here because collection
    # happens before any test user or token can exist.
    raw = SchemaGenerator().get_schema(request=None, public=True)
    return dict(json.loads(OpenApiJsonRenderer().render(raw)))


schema = schemathesis.openapi.from_dict(_document())
schema.app = application


def test_api_schema_served_document_is_the_tested_one(client: Any) -> None:
    assert client.get("/api/schema/").json() == _document()


@schema.parametrize()
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_api_schema_responses_conform(case: Any, token: str, enqueued: list) -> None:
    case.call_and_validate(headers={"Authorization": f"Token {token}"}, checks=CHECKS)
