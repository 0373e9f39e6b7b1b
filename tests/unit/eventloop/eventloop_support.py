"""Helpers of the event loop tests: a gauge of bodies in flight, and polling with a bound."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


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


def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    """Poll `condition` until it holds; fail after `timeout` seconds (a generous bound)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.002)
