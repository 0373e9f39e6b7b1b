"""`bench stream`: how long a chunk takes from a step's `write()` to an SSE client.

The benchmark serves the API from a thread of its own process (Django's threaded WSGI
server, as `runserver` does), starts a worker, and runs `examples.ticks`: one step writing
`chunks` chunks, each stamped with the time of its write. `clients` SSE readers (threads of
one separate process) follow the run's stream from its start; each chunk's latency is the
time it arrived at a reader minus its stamp (one machine, one clock). The writes are paced
(`pause_ms`) so that the figure is a live reader's latency, not the time to drain a backlog.
"""

from __future__ import annotations

import multiprocessing
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

from django.contrib.auth.models import Permission, User
from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler
from django.core.wsgi import get_wsgi_application
from rest_framework.authtoken.models import Token

from bench import environment
from bench.environment import Pool
from bench.sse_client import SSEReader
from bench.stats import p50_p95
from runtime import start

WARM_UP_CHUNKS = 20


class _QuietHandler(WSGIRequestHandler):
    def setup(self) -> None:
        super().setup()
        # Events are small writes: without this, Nagle's algorithm holds each one back until
        # the client acknowledges the previous (as production servers like gunicorn also do).
        cast(socket.socket, self.connection).setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        return None


@contextmanager
def api_server() -> Iterator[str]:
    """The demo project's WSGI app on a free local port, in a daemon thread; yields its URL."""
    server = ThreadedWSGIServer(("127.0.0.1", 0), _QuietHandler, allow_reuse_address=True)
    server.set_app(get_wsgi_application())
    thread = threading.Thread(target=server.serve_forever, name="bench-api", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _tokens(count: int) -> list[str]:
    """A user a reader: one user may hold only FANFOLD_MAX_STREAMS_PER_USER streams."""
    keys = []
    for n in range(count):
        user, _ = User.objects.get_or_create(username=f"fanfold-bench-{n}")
        # The readers follow a run they do not own: seeing every run is their permission.
        user.user_permissions.add(
            Permission.objects.get(content_type__app_label="runtime", codename="view_run")
        )
        token, _ = Token.objects.get_or_create(user=user)
        keys.append(str(token.key))
    return keys


def _follow(url: str, path: str, token: str, timeout: float) -> list[float]:
    """Read the stream at `path` to its end; every chunk's latency in milliseconds."""
    reader = SSEReader(url, path, {"Authorization": f"Token {token}"})
    latencies = []
    for event in reader.events(timeout=timeout):
        if event.event == "message":
            latencies.append((time.time() - float(event.data["written_at"])) * 1000)
    return latencies


def _readers(
    url: str, path: str, tokens: list[str], clients: int, timeout: float, out: Any
) -> None:
    """In the readers' process: `clients` threads follow the stream; latencies go to `out`."""
    results: list[list[float]] = [[] for _ in range(clients)]

    def read(slot: int) -> None:
        results[slot] = _follow(url, path, tokens[slot], timeout)

    threads = [threading.Thread(target=read, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    out.put(results)


def _one_run(
    url: str, tokens: list[str], chunks: int, clients: int, pause: float, timeout: float
) -> dict[str, Any]:
    handle = start("examples.ticks", chunks, pause)
    # The readers get a process of their own, as browsers would be: the server's threads do
    # not share a GIL with them. Forked, they use nothing but sockets.
    context = multiprocessing.get_context("fork")
    out = context.Queue()
    path = f"/api/runs/{handle.id}/streams/default/"
    child = context.Process(target=_readers, args=(url, path, tokens, clients, timeout, out))
    child.start()
    results: list[list[float]] = out.get(timeout=timeout)
    child.join(timeout)
    handle.wait(timeout=timeout)
    received = [len(r) for r in results]
    if received != [chunks] * clients:
        raise RuntimeError(f"readers received {received} chunks, expected {chunks} each")
    return {"latency_ms": p50_p95([ms for r in results for ms in r])}


def run_stream(chunks: int, clients: int, pause_ms: float, timeout: float) -> dict[str, Any]:
    """Write-to-read latency of `chunks` chunks, read by `clients` SSE clients at once."""
    tokens = _tokens(max(clients, 1))
    with environment.workers(Pool("threads", 1, 4)), api_server() as url:
        _one_run(url, tokens, WARM_UP_CHUNKS, 1, 0.0, timeout)  # connections, listener, prepares
        measured = _one_run(url, tokens, chunks, clients, pause_ms / 1000, timeout)
    return {
        "scenario": "stream",
        **environment.describe(),
        "chunks": chunks,
        "clients": clients,
        "pause_ms": pause_ms,
        **measured,
    }
