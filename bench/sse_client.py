"""A small server-sent-events client over http.client, reconnecting like EventSource.

The acceptance tests and `bench stream` read streams through it: it follows the SSE framing
(`id:`, `event:`, `data:` lines, a blank line ends an event), reconnects with `Last-Event-ID`
when a response ends without an `end` event, and stops on `end` or a 204.
"""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit


@dataclass(frozen=True)
class Event:
    id: int | None
    event: str
    data: Any


@dataclass
class SSEReader:
    """Reads `path` on `base_url` (http://host:port) with these extra headers."""

    base_url: str
    path: str
    headers: dict[str, str] = field(default_factory=dict)
    last_id: int = 0
    connections: int = 0
    ended: bool = False

    def events(self, timeout: float = 60.0) -> Iterator[Event]:
        """Every event until the stream ends, across as many reconnects as it takes."""
        deadline = time.monotonic() + timeout
        while not self.ended:
            if time.monotonic() > deadline:
                raise TimeoutError(f"stream {self.path} did not end within {timeout} s")
            yield from self.one_response(deadline - time.monotonic())

    def one_response(
        self, timeout: float, stop: Callable[[Event], bool] | None = None
    ) -> Iterator[Event]:
        """The events of one response; `stop(event)` true drops the connection after it."""
        split = urlsplit(self.base_url)
        conn = http.client.HTTPConnection(
            split.hostname or "127.0.0.1", split.port, timeout=timeout
        )
        headers = {"Accept": "text/event-stream", **self.headers}
        if self.last_id:
            headers["Last-Event-ID"] = str(self.last_id)
        self.connections += 1
        try:
            conn.request("GET", self.path, headers=headers)
            response = conn.getresponse()
            if response.status == 204:
                self.ended = True
                return
            if response.status != 200:
                raise RuntimeError(f"GET {self.path}: {response.status} {response.read()!r}")
            for event in _parse(response):
                if event.id is not None:
                    self.last_id = event.id
                if event.event == "end":
                    self.ended = True
                yield event
                if self.ended or (stop is not None and stop(event)):
                    return
        finally:
            conn.close()


def _parse(response: http.client.HTTPResponse) -> Iterator[Event]:
    event_id: int | None = None
    kind, data = "message", ""
    while True:
        raw = response.readline()
        if not raw:
            return
        line = raw.decode().rstrip("\n")
        if line == "":
            if data:
                yield Event(event_id, kind, json.loads(data))
            event_id, kind, data = None, "message", ""
        elif line.startswith("id: "):
            event_id = int(line[4:])
        elif line.startswith("event: "):
            kind = line[7:]
        elif line.startswith("data: "):
            data += line[6:]
