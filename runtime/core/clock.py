"""The clock port: real time in production, a settable clock in tests."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime: ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class FakeClock:
    """A clock that only moves when told to (`advance`, `set`)."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2030, 1, 1, tzinfo=UTC)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, seconds: float | timedelta) -> datetime:
        delta = seconds if isinstance(seconds, timedelta) else timedelta(seconds=seconds)
        with self._lock:
            self._now += delta
            return self._now

    def set(self, moment: datetime) -> None:
        with self._lock:
            self._now = moment


# The process's clock: every durable timer (sleeps, retry delays, callback, heartbeat and wait
# time-outs, run_after, debounce windows, schedule ticks) and every lease reads it, so that a
# test environment (runtime.testing.WorkflowEnvironment) can install a virtual one.
_installed: Clock = SystemClock()
_install_lock = threading.Lock()


def current_time() -> datetime:
    """Now, on the process's clock (the wall clock unless a test installed another)."""
    return _installed.now()


def current_clock() -> Clock:
    """The process's clock."""
    return _installed


def install_clock(clock: Clock) -> Clock:
    """Make `clock` the process's clock; returns the one it replaces."""
    global _installed
    with _install_lock:
        previous, _installed = _installed, clock
    return previous
