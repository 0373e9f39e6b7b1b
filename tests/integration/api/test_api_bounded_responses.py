"""Bounded responses: summaries unless ?include= asks, a byte budget per page, a rate per
user, and X-Forwarded-For believed only from trusted proxies."""

from __future__ import annotations

import json
import uuid
from typing import Any

import api_flows  # noqa: F401  (registers the workflows)
import pytest
from rest_framework.test import APIClient

from runtime.core.clock import FakeClock
from runtime.executor import execute


def start(client: APIClient, *args: Any) -> str:
    body = {"workflow": "tests.api.double", "args": list(args)}
    response = client.post("/api/runs/", json.dumps(body), content_type="application/json")
    assert response.status_code == 201, response.content
    return str(response.json()["id"])


def test_api_bounded_run_list_is_summaries_unless_included(
    client: APIClient, clock: FakeClock
) -> None:
    execute(uuid.UUID(start(client, 21)), clock=clock)
    summary = client.get("/api/runs/").json()["results"][0]
    assert not {"args", "kwargs", "result", "error"} & set(summary)
    assert summary["status"] == "completed"
    full = client.get("/api/runs/?include=input,result").json()["results"][0]
    assert (full["args"], full["result"]["value"]) == ([21], 42)
    assert "error" not in full


def test_api_bounded_steps_and_events_leave_payloads_out(
    client: APIClient, clock: FakeClock
) -> None:
    run_id = start(client, 4)
    execute(uuid.UUID(run_id), clock=clock)
    step = client.get(f"/api/runs/{run_id}/steps/").json()["results"][0]
    assert not {"input", "result", "error"} & set(step)
    assert (
        client.get(f"/api/runs/{run_id}/steps/?include=result").json()["results"][0]["result"] == 8
    )
    events = client.get(f"/api/runs/{run_id}/events/").json()["results"]
    assert events and all("payload" not in e for e in events)
    with_payload = client.get(f"/api/runs/{run_id}/events/?include=payload").json()["results"]
    assert all("payload" in e for e in with_payload)


@pytest.mark.parametrize(
    "url", ["/api/runs/?include=secrets", "/api/runs/{run}/events/?include=result"]
)
def test_api_bounded_unknown_include_is_400(client: APIClient, url: str) -> None:
    response = client.get(url.format(run=start(client, 1)))
    assert response.status_code == 400
    assert "include" in response.json()["error"]["fields"]


def test_api_bounded_run_pages_stop_at_the_byte_budget(
    client: APIClient, fanfold_settings: Any
) -> None:
    ids = [start(client, n) for n in range(7)][::-1]  # newest first
    fanfold_settings(API_PAGE_BYTES=700)
    seen: list[str] = []
    sizes: list[int] = []
    url: str | None = "/api/runs/?include=input&page_size=5"
    while url:
        page = client.get(url).json()
        sizes.append(len(page["results"]))
        seen += [r["id"] for r in page["results"]]
        url = page["next"]
    assert seen == ids  # every run once, in order: the cursor goes on from the cut
    assert max(sizes) < 5 and min(sizes) >= 1


def test_api_bounded_event_pages_stop_at_the_byte_budget(
    client: APIClient, clock: FakeClock, fanfold_settings: Any
) -> None:
    run_id = start(client, 3)
    execute(uuid.UUID(run_id), clock=clock)
    every = [e["seq"] for e in client.get(f"/api/runs/{run_id}/events/").json()["results"]]
    fanfold_settings(API_PAGE_BYTES=1)  # one row a page: a page always moves on
    seen: list[int] = []
    url: str | None = f"/api/runs/{run_id}/events/?include=payload"
    while url:
        page = client.get(url).json()
        assert len(page["results"]) == 1
        seen += [e["seq"] for e in page["results"]]
        url = page["next"]
    assert seen == every


def test_api_bounded_user_rate_is_429_with_retry_after(
    client: APIClient, fanfold_settings: Any
) -> None:
    fanfold_settings(API_USER_RATE="3/minute")
    codes = [client.get("/api/workflows/").status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    refused = client.get("/api/workflows/")
    assert refused.json()["error"]["code"] == "throttled"
    assert int(refused["Retry-After"]) > 0


def callback_codes(anon: APIClient, count: int, **meta: str) -> list[int]:
    return [
        anon.post(
            f"/api/callbacks/no-such-token-{n}/",
            '{"heartbeat": true}',
            content_type="application/json",
            **meta,
        ).status_code
        for n in range(count)
    ]


@pytest.fixture
def callback_rate(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two callback posts a minute (DRF reads its rates once, into a class attribute)."""
    rates = {"callbacks": "2/minute"}
    monkeypatch.setattr("rest_framework.throttling.SimpleRateThrottle.THROTTLE_RATES", rates)


def test_api_bounded_callback_throttle_ignores_forwarded_for_from_anyone(
    anon: APIClient, callback_rate: None
) -> None:
    codes = [callback_codes(anon, 1, HTTP_X_FORWARDED_FOR=f"203.0.113.{n}")[0] for n in range(3)]
    assert codes == [404, 404, 429]


def test_api_bounded_callback_throttle_believes_trusted_proxies(
    anon: APIClient, fanfold_settings: Any, callback_rate: None
) -> None:
    fanfold_settings(TRUSTED_PROXIES="127.0.0.0/8,10.0.0.0/8")
    # The test client's peer is 127.0.0.1: each forwarded client has its own count.
    for n in range(3):
        chain = f"203.0.113.{n}, 10.1.2.3"  # the client, then an inner proxy
        assert callback_codes(anon, 2, HTTP_X_FORWARDED_FOR=chain) == [404, 404]
    assert callback_codes(anon, 3, HTTP_X_FORWARDED_FOR="203.0.113.0") == [429, 429, 429]
