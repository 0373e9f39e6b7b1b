"""`/api/mcp/`: the MCP server over streamable HTTP, behind the API's authentication.

The view authenticates like every API view (a token, a session) and hands the request to the
SDK's streamable HTTP transport (stateless, JSON responses) as an ASGI call, the user in its
scope. The transport runs on one event loop in a thread of its own per process, started on
the first request; the view waits for the response. The `mcp` package is imported then, so
the core never needs the extra.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import MutableMapping
from typing import Any

from django.http import HttpRequest, HttpResponse

MAX_SECONDS = 300.0  # a tool call (a run's history, a start) longer than this is cut off


class _Bridge:
    """The MCP server's session manager running on its own event loop thread."""

    def __init__(self) -> None:
        from api.mcp.server import build, request_user

        self.server = build(request_user)
        self.server.streamable_http_app()  # makes the session manager
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        threading.Thread(target=self._serve, args=(ready,), name="fanfold-mcp", daemon=True).start()
        ready.wait(10)

    def _serve(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)

        async def serve() -> None:
            async with self.server.session_manager.run():
                ready.set()
                await asyncio.Event().wait()  # for the process's life

        self.loop.run_until_complete(serve())

    def handle(self, scope: dict[str, Any], body: bytes) -> tuple[int, list[Any], bytes]:
        done = asyncio.run_coroutine_threadsafe(self._call(scope, body), self.loop)
        return done.result(MAX_SECONDS)

    async def _call(self, scope: dict[str, Any], body: bytes) -> tuple[int, list[Any], bytes]:
        sent = {"body": False}
        status, headers, chunks = 500, [], []
        finished = asyncio.Event()

        async def receive() -> dict[str, Any]:
            if not sent["body"]:
                sent["body"] = True
                return {"type": "http.request", "body": body, "more_body": False}
            await finished.wait()
            return {"type": "http.disconnect"}

        async def send(message: MutableMapping[str, Any]) -> None:
            nonlocal status, headers
            if message["type"] == "http.response.start":
                status, headers = message["status"], message.get("headers", [])
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
                if not message.get("more_body"):
                    finished.set()

        await self.server.session_manager.handle_request(scope, receive, send)
        finished.set()
        return status, headers, b"".join(chunks)


_bridge: _Bridge | None = None
_lock = threading.Lock()


def bridge() -> _Bridge:
    global _bridge
    with _lock:
        if _bridge is None:
            _bridge = _Bridge()
        return _bridge


def forward(request: HttpRequest | Any, user: Any) -> HttpResponse:
    """The MCP transport's response to this (authenticated) request, made as `user` (a
    Django request, or DRF's, which reads as one)."""
    from api.mcp.server import USER_SCOPE_KEY

    headers = [
        (name.lower().encode("latin-1"), value.encode("latin-1"))
        for name, value in request.headers.items()
        if name.lower() not in ("authorization", "cookie")
    ]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": request.scheme,
        "path": "/",
        "raw_path": b"/",
        "root_path": "",
        "query_string": request.META.get("QUERY_STRING", "").encode("latin-1"),
        "headers": headers,
        "server": (request.get_host().split(":")[0], int(request.get_port() or 80)),
        "client": (request.META.get("REMOTE_ADDR", ""), 0),
        USER_SCOPE_KEY: user,
    }
    status, out_headers, body = bridge().handle(scope, request.body)
    response = HttpResponse(body, status=status)
    for name, value in out_headers:
        key = name.decode("latin-1")
        if key.lower() not in ("content-length", "transfer-encoding", "connection"):
            response[key] = value.decode("latin-1")
    return response
