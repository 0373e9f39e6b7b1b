"""Streams with real workers: chunks written by steps and workflows reach readers in order,
over `read_stream()` and over server-sent events (many clients at once, with resumes)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from rest_framework.authtoken.models import Token

import tests.acceptance.stream_flows as flows
from bench.sse_client import Event, SSEReader
from runtime import get_run, start
from runtime.models import StreamChunk
from tests.support.users import operator
from tests.support.workers import running_worker

WORKER_ENV = {"FANFOLD_WORKFLOW_MODULES": flows.MODULE}


@pytest.fixture
def token(transactional_db: Any) -> str:
    user = operator("ada")
    return Token.objects.create(user=user).key


def _read_all(reader: SSEReader, into: list[Event], drop_after: int | None = None) -> None:
    """Read until the end; with `drop_after`, hang up once after that many events first."""
    if drop_after is not None:
        for event in reader.one_response(60.0, stop=lambda e: len(into) + 1 >= drop_after):
            into.append(event)
    for event in reader.events(timeout=120.0):
        into.append(event)


def test_streams_thousand_chunks_reach_twenty_sse_clients_in_order(
    live_server: Any, token: str, counters_redis: Any
) -> None:
    count = 1000
    # A user a reader: one user may hold only FANFOLD_MAX_STREAMS_PER_USER streams.
    tokens = [token] + [Token.objects.create(user=operator(f"reader-{n}")).key for n in range(19)]
    with running_worker("streams", "threads", 2, **WORKER_ENV):
        run = start(flows.chunks, count, 100)
        path = f"/api/runs/{run.id}/streams/default/"
        readers = [
            SSEReader(live_server.url, path, {"Authorization": f"Token {t}"}) for t in tokens
        ]
        received: list[list[Event]] = [[] for _ in readers]
        threads = [
            threading.Thread(target=_read_all, args=(r, got, 300 if i == 0 else None))
            for i, (r, got) in enumerate(zip(readers, received, strict=True))
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(180)
        assert run.wait(timeout=60) == count

    expected = list(range(1, count + 1))
    for reader, got in zip(readers, received, strict=True):
        data = [e for e in got if e.event == "message"]
        assert [e.id for e in data] == expected
        assert [e.data["i"] for e in data] == list(range(count))
        assert got[-1].event == "end" and got[-1].data == {"status": "completed"}
        assert reader.ended
    assert readers[0].connections >= 2  # it hung up after 300 and resumed with Last-Event-ID


def test_streams_sse_windows_end_and_the_client_resumes(
    live_server: Any, token: str, counters_redis: Any, settings: Any
) -> None:
    from runtime import conf

    settings.FANFOLD = {**getattr(settings, "FANFOLD", {}), "SSE_WINDOW_SECONDS": 0.3}
    conf.reset()
    with running_worker("windows", "threads", 2, **WORKER_ENV):
        run = start(flows.chunks, 60, 5)  # about 0.6 s of writing: several windows
        reader = SSEReader(live_server.url, f"/api/runs/{run.id}/streams/default/",
                           {"Authorization": f"Token {token}"})  # fmt: skip
        got = [e for e in reader.events(timeout=60) if e.event == "message"]
        assert run.wait(timeout=30) == 60
    assert [e.id for e in got] == list(range(1, 61))
    assert reader.connections >= 2
    again = SSEReader(reader.base_url, reader.path, reader.headers, last_id=60)
    assert list(again.events(timeout=10)) == []  # finished and drained: 204, no reconnects
    assert again.ended and again.connections == 1
    conf.reset()


def test_streams_workflow_writes_once_and_failed_attempts_keep_their_chunks(
    transactional_db: Any, counters_redis: Any
) -> None:
    with running_worker("progress", "threads", 2, **WORKER_ENV):
        run = start(flows.progress)
        handle = get_run(run.id)
        progress = list(handle.read_stream("progress", timeout=60))
        assert run.wait(timeout=30) == "ok"
    assert progress == ["begun", "slept", "done"]
    assert list(handle.read_stream("attempts")) == ["flaky attempt 1", "flaky attempt 2"]
    assert list(handle.read_stream("progress", after=2)) == ["done"]
    seqs = StreamChunk.objects.filter(run_id=run.id, stream="progress").values_list(
        "seq", flat=True
    )
    assert sorted(seqs) == [1, 2, 3]


def test_streams_read_stream_follows_a_running_step(
    transactional_db: Any, counters_redis: Any
) -> None:
    with running_worker("follow", "threads", 2, **WORKER_ENV):
        run = start(flows.chunks, 200, 20)
        values = [v["i"] for v in get_run(run.id).read_stream(timeout=60)]
    assert values == list(range(200))


def test_streams_run_wait_is_woken_by_the_notification(
    transactional_db: Any, counters_redis: Any
) -> None:
    with running_worker("wake", "threads", 2, **WORKER_ENV):
        start(flows.chunks, 1).wait(timeout=60)  # the worker is warm
        run = start(flows.chunks, 5)
        began = time.monotonic()
        # Polling alone would look once every 30 s: only the notification can end this early.
        assert run.wait(timeout=60, poll_interval=30.0) == 5
        assert time.monotonic() - began < 15
