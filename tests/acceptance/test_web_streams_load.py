"""The shipped gunicorn config under open streams: 20 server-sent-event streams (five users at
their cap of four) leave normal requests answered, and the cap holds across worker processes.
"""

from __future__ import annotations

import statistics
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from rest_framework.authtoken.models import Token

from runtime.services import start_run
from runtime.testing import use_dispatcher
from tests.support.dispatch import RecordingDispatcher
from tests.support.users import operator
from tests.support.webserver import collect_static, running_gunicorn
from tests.support.workers import ARTIFACTS

pytestmark = pytest.mark.django_db(transaction=True)

STREAMERS = 5
CAP = 4  # the default FANFOLD_MAX_STREAMS_PER_USER
WINDOW = 15.0  # the default FANFOLD_SSE_WINDOW_SECONDS: every answer must come within it
SAMPLES = 200


@pytest.fixture(scope="module")
def server(
    django_db_setup: None, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """The shipped config (gthread, 8 threads a worker) with three workers: 24 threads."""
    static_root = tmp_path_factory.mktemp("static")
    with django_db_blocker.unblock():
        collect_static(static_root)
        with running_gunicorn(static_root, ARTIFACTS / "gunicorn-streams.log", workers=3) as base:
            yield base


def token_for(name: str) -> str:
    return Token.objects.create(user=operator(name)).key


def open_stream(base: str, run_id: uuid.UUID, token: str) -> Any:
    request = urllib.request.Request(
        f"{base}/api/runs/{run_id}/streams/numbers/",
        headers={"Authorization": f"Token {token}", "Accept": "text/event-stream"},
    )
    return urllib.request.urlopen(request, timeout=WINDOW)


class StreamHolder(threading.Thread):
    """Keeps one stream open, reconnecting when its window ends, until stopped."""

    def __init__(self, base: str, run_id: uuid.UUID, token: str) -> None:
        super().__init__(daemon=True)
        self.base, self.run_id, self.token = base, run_id, token
        self.opened = threading.Event()
        self.stop = threading.Event()
        self.errors: list[str] = []

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                with open_stream(self.base, self.run_id, self.token) as response:
                    response.read(len(b"retry: "))
                    self.opened.set()
                    while not self.stop.is_set() and response.read(1):
                        pass
            except (OSError, urllib.error.URLError) as exc:
                if not self.stop.is_set():
                    self.errors.append(repr(exc))
                    time.sleep(0.1)


def timed_get(base: str, path: str, token: str) -> tuple[int, float]:
    request = urllib.request.Request(base + path, headers={"Authorization": f"Token {token}"})
    began = time.perf_counter()
    with urllib.request.urlopen(request, timeout=WINDOW) as response:
        response.read()
        return response.status, time.perf_counter() - began


def test_web_streams_twenty_open_streams_leave_requests_answered(server: str) -> None:
    with use_dispatcher(RecordingDispatcher()):
        run, _ = start_run("examples.nap", [3600], {})  # pending: its stream stays open
    tokens = [token_for(f"streamer-{n}") for n in range(STREAMERS)]
    reader = token_for("reader")
    holders = [StreamHolder(server, run.id, t) for t in tokens for _ in range(CAP)]
    for holder in holders:
        holder.start()
    try:
        assert all(holder.opened.wait(WINDOW) for holder in holders), "a stream did not open"
        # A fifth stream of a user at the cap is refused, whichever worker process serves it.
        with pytest.raises(urllib.error.HTTPError) as refused:
            open_stream(server, run.id, tokens[0])
        assert refused.value.code == 429
        answers = [timed_get(server, "/api/workflows/", reader) for _ in range(SAMPLES)]
    finally:
        for holder in holders:
            holder.stop.set()
    assert {status for status, _ in answers} == {200}
    in_order = [seconds for _, seconds in answers]
    latencies = sorted(in_order)
    p99 = latencies[int(len(latencies) * 0.99) - 1]
    print(
        f"\nGET /api/workflows/ beside {len(holders)} open streams: "
        f"p50 {statistics.median(latencies) * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, "
        f"max {latencies[-1] * 1000:.1f} ms (request {in_order.index(latencies[-1]) + 1})"
    )
    assert latencies[-1] < WINDOW  # a sanity bound, not a performance target
    assert not [e for holder in holders for e in holder.errors]
