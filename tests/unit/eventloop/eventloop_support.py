"""Helpers of the event loop tests: a gauge of bodies in flight, and polling with a bound."""

from __future__ import annotations

import threading


class Gauge:
    """How many bodies are in flight now, the most at once, and how many ever started."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.now = 0
        self.most = 0
        self.started = 0

    def enter(self) -> None:
        with self._lock:
            self.now += 1
            self.started += 1
            self.most = max(self.most, self.now)

    def leave(self) -> None:
        with self._lock:
            self.now -= 1
