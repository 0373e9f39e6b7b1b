"""Waiting in tests: until a condition holds, or while one must not.

Every tier polls the same way: `wait_until` for what must happen (threads, worker processes, a
server coming up), `stays_false` for what must not happen for a while (a bound kept, a warning
given once). A test that would otherwise sleep a fixed time says what it waits for instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(
    predicate: Callable[[], T],
    timeout: float = 10.0,
    *,
    interval: float = 0.02,
    message: str = "the condition",
) -> T:
    """Poll `predicate` every `interval` seconds until it returns something true, and return
    that; TimeoutError naming `message` after `timeout` seconds (a generous bound, never the
    expected time). An exception from `predicate` goes to the caller."""
    deadline = time.monotonic() + timeout
    while True:
        found = predicate()
        if found:
            return found
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up waiting for {message} after {timeout} s")
        time.sleep(interval)


def stays_false(
    predicate: Callable[[], object], for_seconds: float, *, interval: float = 0.005
) -> bool:
    """Whether `predicate` stays false for `for_seconds`, polled every `interval` seconds;
    False as soon as it holds (`assert stays_false(...)` fails at once then)."""
    deadline = time.monotonic() + for_seconds
    while True:
        if predicate():
            return False
        if time.monotonic() >= deadline:
            return True
        time.sleep(min(interval, max(deadline - time.monotonic(), 0.0)))
