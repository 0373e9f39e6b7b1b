"""GET /api/runs/{id}/streams/{name}/: server-sent events, resume, windows, errors."""

from __future__ import annotations

import json
import uuid
from typing import Any

import api_flows  # noqa: F401  (registers the workflows)
import pytest
from rest_framework.test import APIClient

from runtime.core.clock import FakeClock
from runtime.executor import execute
from runtime.services import start_run
from tests.support.users import operator


def started(count: int, clock: FakeClock, then_sleep: float = 0) -> uuid.UUID:
    run, _ = start_run("tests.api.streamer", [count, then_sleep])
    execute(run.id, clock=clock)
    return run.id


def events(response: Any) -> list[dict[str, Any]]:
    """The SSE events of a streamed response, as dicts of their fields."""
    return parse(b"".join(response.streaming_content).decode())


def parse(body: str) -> list[dict[str, Any]]:
    parsed = []
    for block in body.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "data" in fields:
            fields["data"] = json.loads(fields["data"])
            parsed.append(fields)
    return parsed


def get(client: APIClient, run_id: Any, name: str = "numbers", **headers: str) -> Any:
    return client.get(f"/api/runs/{run_id}/streams/{name}/", HTTP_ACCEPT="text/event-stream",
                      **headers)  # fmt: skip


def test_api_streams_sends_every_chunk_then_end(client: APIClient, clock: FakeClock) -> None:
    run_id = started(3, clock)
    response = get(client, run_id)
    assert response.status_code == 200
    assert response["Content-Type"] == "text/event-stream"
    assert response["Cache-Control"] == "no-cache"
    got = events(response)
    assert [(e.get("id"), e["data"]) for e in got[:-1]] == [
        ("1", {"i": 0}),
        ("2", {"i": 1}),
        ("3", {"i": 2}),
    ]
    assert got[-1] == {"event": "end", "data": {"status": "completed"}}


def test_api_streams_last_event_id_resumes_after_it(client: APIClient, clock: FakeClock) -> None:
    run_id = started(4, clock)
    got = events(get(client, run_id, HTTP_LAST_EVENT_ID="2"))
    assert [e.get("id") for e in got] == ["3", "4", None]
    got = events(client.get(f"/api/runs/{run_id}/streams/numbers/?after=3"))
    assert [e.get("id") for e in got] == ["4", None]


def test_api_streams_finished_and_drained_is_204(client: APIClient, clock: FakeClock) -> None:
    run_id = started(2, clock)
    assert get(client, run_id, HTTP_LAST_EVENT_ID="2").status_code == 204


@pytest.mark.parametrize("after", ["0", "2"])
def test_api_streams_a_finished_runs_unwritten_stream_is_404(
    client: APIClient, clock: FakeClock, after: str
) -> None:
    for run_id, name in ((started(2, clock), "never-written"), (started(0, clock), "numbers")):
        response = get(client, run_id, name=name, HTTP_LAST_EVENT_ID=after)
        assert response.status_code == 404
        error = response.json()["error"]
        assert error["code"] == "stream_not_found"
        assert f"never wrote stream {name!r}" in error["message"]


def test_api_streams_an_unwritten_stream_of_a_running_run_is_followed(
    client: APIClient, clock: FakeClock, settings: Any
) -> None:
    from runtime import conf

    settings.FANFOLD = {**settings.FANFOLD, "SSE_WINDOW_SECONDS": 0.2}
    conf.reset()
    run_id = started(1, clock, then_sleep=3600)  # it may still write the stream
    response = get(client, run_id, name="later")
    assert response.status_code == 200
    assert events(response) == []


def test_api_streams_window_ends_the_response_while_the_run_goes_on(
    client: APIClient, clock: FakeClock, settings: Any
) -> None:
    from runtime import conf

    settings.FANFOLD = {**settings.FANFOLD, "SSE_WINDOW_SECONDS": 0.2}
    conf.reset()
    run_id = started(2, clock, then_sleep=3600)
    response = get(client, run_id)
    body = b"".join(response.streaming_content).decode()
    assert body.startswith("retry: ")  # EventSource comes back after this many ms
    got = parse(body)
    assert [e.get("id") for e in got] == ["1", "2"]  # no end event: the run is asleep
    again = events(get(client, run_id, HTTP_LAST_EVENT_ID="2"))
    assert again == []


@pytest.mark.parametrize("bad", ["abc", "-1", "1.5", "9" * 30, "\u00b2", "\u0661"])
def test_api_streams_bad_last_event_id_is_400(
    client: APIClient, clock: FakeClock, bad: str
) -> None:
    run_id = started(1, clock)
    response = get(client, run_id, HTTP_LAST_EVENT_ID=bad)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid"


@pytest.mark.parametrize("bad", ["\u00b2", "x", "1e3"])
def test_api_streams_bad_after_param_is_400(client: APIClient, clock: FakeClock, bad: str) -> None:
    run_id = started(1, clock)
    response = client.get(f"/api/runs/{run_id}/streams/numbers/", {"after": bad})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid"


def test_api_streams_open_streams_per_user_are_capped(
    client: APIClient, clock: FakeClock, fanfold_settings: Any
) -> None:
    fanfold_settings(MAX_STREAMS_PER_USER=2)
    run_id = started(1, clock, then_sleep=3600)
    held = [get(client, run_id, HTTP_LAST_EVENT_ID="1") for _ in range(2)]
    assert [r.status_code for r in held] == [200, 200]
    refused = get(client, run_id, HTTP_LAST_EVENT_ID="1")
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "too_many_streams"
    other = APIClient()
    other.force_authenticate(operator("grace"))
    other_stream = get(other, run_id, HTTP_LAST_EVENT_ID="1")
    assert other_stream.status_code == 200
    held[0].close()  # a closed response gives its slot back, even never read
    again = get(client, run_id, HTTP_LAST_EVENT_ID="1")
    assert again.status_code == 200
    for response in (held[1], other_stream, again):
        response.close()


def test_api_streams_unknown_run_is_404(client: APIClient) -> None:
    for run_id in (uuid.uuid4(), "not-a-run"):
        response = get(client, run_id)
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"


def test_api_streams_needs_authentication(anon: APIClient, clock: FakeClock) -> None:
    run_id = started(1, clock)
    response = get(anon, run_id)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"
