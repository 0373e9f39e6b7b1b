"""Malformed input on every endpoint of the API: never a 5xx.

The endpoints come from the OpenAPI document (so a new one is covered without editing this
file), each path parameter filled with a real value and with a NUL byte. Every operation gets
deep nesting, NaN and Infinity, huge numbers, bytes that are not UTF-8, NUL bytes and lone
surrogates in strings, JSON of the wrong types, the wrong content type and an empty body, as
an anonymous client, with a token and with a session; every GET gets malformed query
parameters as well.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import api_flows  # noqa: F401  (registers the workflows)
import pytest
from django.contrib.auth.models import User
from django.test import Client
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from runtime.core.clock import FakeClock
from runtime.executor import execute
from runtime.services import start_run
from runtime.testing import callback_token

DEEP = 1000
HUGE = "9" * 400
BODIES: list[tuple[str, bytes | str]] = [
    ("deep list", "[" * DEEP + "]" * DEEP),
    ("deep object", '{"a":' * DEEP + "1" + "}" * DEEP),
    ("deep in fields", json.dumps({"workflow": "tests.api.double"})[:-1]
     + ', "args": ' + "[" * DEEP + "]" * DEEP + ', "result": ' + "[" * DEEP + "]" * DEEP + "}"),
    ("NaN", '{"workflow": "tests.api.double", "args": [NaN], "result": NaN}'),
    ("Infinity", '{"args": [Infinity], "from_position": -Infinity, "result": Infinity}'),
    ("overflowing float", '{"args": [1e400], "result": -1e999, "from_position": 1e400}'),
    ("400 digits", f'{{"workflow": "tests.api.double", "args": [{HUGE}], "result": {HUGE}, '
     f'"priority": {HUGE}, "from_position": {HUGE}, "kwargs": {{"n": -{HUGE}}}}}'),
    ("not UTF-8", b'{"workflow": "\xff\xfe", "result": "\xc3\x28"}'),
    ("NUL in strings", '{"workflow": "tests.api.double\\u0000", "args": ["\\u0000"], '
     '"kwargs": {"\\u0000": 1}, "result": "a\\u0000b", "idempotency_key": "\\u0000", '
     '"error": {"type": "\\u0000", "message": "\\u0000"}}'),
    ("lone surrogate", '{"workflow": "tests.api.double", "args": ["\\ud800"], '
     '"result": {"\\udfff": 1}, "concurrency_key": "\\ud800"}'),
    ("list for object", "[1, 2, 3]"),
    ("string for object", '"just a string"'),
    ("number for object", "42"),
    ("null", "null"),
    ("wrong field types", '{"workflow": ["x"], "args": {"a": 1}, "kwargs": [1], "priority": "high",'
     ' "idempotency_key": {}, "from_position": "two", "result": [], "error": "boom",'
     ' "heartbeat": "maybe"}'),
    ("error of wrong shape", '{"error": {"type": [], "message": {}}}'),
    ("empty", ""),
    ("truncated", '{"workflow": "tests.api.dou'),
]  # fmt: skip
CONTENT_TYPES = ["application/json", "text/plain", "application/x-www-form-urlencoded",
                 "multipart/form-data; boundary=x", "application/json; charset=utf-16"]  # fmt: skip
QUERIES = [
    "after=%C2%B2", "after=-1&limit=0", "after=" + HUGE, "limit=" + HUGE, "limit=NaN",
    "cursor=cD1ub3RhZGF0ZQ==", "cursor=%00", "cursor=" + "A" * 2000, "page_size=-5",
    "page_size=" + HUGE, "status=%00", "workflow=%00", "include=%00", "include=input,,%FF",
    "format=xml", "format=yaml", "%FF=%FF", "after=1&after=%C2%B2",
]  # fmt: skip
HEADERS = [{"HTTP_LAST_EVENT_ID": "\u00b2"}, {"HTTP_LAST_EVENT_ID": HUGE},
           {"HTTP_ACCEPT": "text/event-stream"}, {"HTTP_ACCEPT": "application/xml"}]  # fmt: skip


def operations() -> list[tuple[str, str]]:
    """Every (method, path template) of the OpenAPI document."""
    document = SchemaGenerator().get_schema(request=None, public=True)
    return sorted(
        (method.upper(), path)
        for path, item in document["paths"].items()
        for method in item
        if method in {"get", "post", "put", "patch", "delete"}
    )


OPERATIONS = operations()


@pytest.fixture
def path_values(clock: FakeClock, enqueued: Any, fanfold_settings: Any) -> dict[str, str]:
    fanfold_settings(SSE_WINDOW_SECONDS=0.05)
    run, _ = start_run("tests.api.approval", [], {})
    execute(run.id, clock=clock)
    token = callback_token(run.id)
    return {"run_id": str(run.id), "token": str(token), "name": "numbers",
            "workflow": "tests.api.double"}  # fmt: skip


@pytest.fixture(params=["anonymous", "token", "session"])
def any_client(request: pytest.FixtureRequest, token: str, enqueued: Any) -> Client:
    if request.param == "anonymous":
        return APIClient()
    if request.param == "token":
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Token {token}")
        return api
    session = Client(enforce_csrf_checks=True)
    session.force_login(User.objects.create_user("session-user"))
    return session


def urls(template: str, values: dict[str, str]) -> Iterator[str]:
    """The path with real values, then with each parameter a NUL byte and a non-ASCII one."""
    yield _filled(template, values)
    for name in values:
        if "{" + name + "}" in template:
            yield _filled(template, {**values, name: "x%00y"})
            yield _filled(template, {**values, name: "%C2%B2%FF"})


def _filled(template: str, values: dict[str, str]) -> str:
    for name, value in values.items():
        template = template.replace("{" + name + "}", value)
    return template


def call(client: Client, method: str, url: str, body: bytes | str = b"", **extra: Any) -> int:
    content_type = extra.pop("content_type", "application/json")
    response = client.generic(method, url, body, content_type=content_type, **extra)
    response.close()  # a stream's slot goes back
    return int(response.status_code)


@pytest.mark.parametrize(("method", "template"), OPERATIONS)
def test_api_malformed_bodies_never_answer_5xx(
    any_client: Client, path_values: dict[str, str], method: str, template: str
) -> None:
    failures = []
    for url in urls(template, path_values):
        for label, body in BODIES:
            for content_type in CONTENT_TYPES[:1] if label != "NaN" else CONTENT_TYPES:
                status = call(any_client, method, url, body, content_type=content_type)
                if status >= 500:
                    failures.append((status, method, url, label, content_type))
        for content_type in CONTENT_TYPES:
            status = call(any_client, method, url, '{"a": 1}', content_type=content_type)
            if status >= 500:
                failures.append((status, method, url, "object", content_type))
    assert failures == []


@pytest.mark.parametrize(("method", "template"), [op for op in OPERATIONS if op[0] == "GET"])
def test_api_malformed_queries_and_headers_never_answer_5xx(
    any_client: Client, path_values: dict[str, str], method: str, template: str
) -> None:
    url = _filled(template, path_values)
    failures = [
        (status, f"{url}?{query}")
        for query in QUERIES
        if (status := call(any_client, method, f"{url}?{query}")) >= 500
    ]
    failures += [
        (status, url, headers)
        for headers in HEADERS
        if (status := call(any_client, method, url, **headers)) >= 500
    ]
    assert failures == []


@pytest.mark.parametrize(
    "path",
    ["/api/%00/", "/api/runs/%00", "/api/\u00b2/", "/api/runs/" + "x" * 5000 + "/"],
    ids=["nul", "nul-no-slash", "superscript", "long-id"],
)
def test_api_malformed_paths_are_4xx(any_client: Client, path: str) -> None:
    assert 400 <= call(any_client, "GET", path) < 500


@pytest.mark.parametrize(
    "header", ["Bearer \u00e9", "Bearer \u00b2\u0000", "Bearer " + "\u00ff" * 5000, "Token x"]
)
def test_api_malformed_metrics_authorization_is_401(
    any_client: Client, fanfold_settings: Any, header: str
) -> None:
    fanfold_settings(METRICS_TOKEN="metrics-token")
    status = call(any_client, "GET", "/metrics", HTTP_AUTHORIZATION=header)
    assert status == 401


def test_api_malformed_covers_every_endpoint() -> None:
    paths = {template for _, template in OPERATIONS}
    assert {"/api/runs/", "/api/callbacks/{token}/", "/api/runs/{run_id}/streams/{name}/"} <= paths
    assert len(OPERATIONS) >= 14


def test_api_malformed_deep_body_is_400_in_the_envelope(client: APIClient) -> None:
    for url in ("/api/runs/", f"/api/callbacks/{uuid.uuid4()}/"):
        response = client.post(url, "[" * DEEP + "]" * DEEP, content_type="application/json")
        assert response.status_code == 400
        assert response.json()["error"]["code"] == "parse_error"
        assert "FANFOLD_MAX_JSON_DEPTH" in response.json()["error"]["message"]
