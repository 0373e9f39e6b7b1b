"""Run signals: wake whoever waits on a run the moment it writes a chunk or finishes.

Each process keeps a generation counter per run. A waiter reads the counter, looks at the
database, and waits for the counter to move: a signal that lands between the look and the
wait is never lost. Signals come from PostgreSQL notifications (one listening connection per
process, runtime.store.messaging.listener) and from writes made in this process (the embedded worker
on SQLite). Waits are always bounded: if a notification is lost (the listener reconnecting) the
waiter looks again after its poll interval, so polling is the fallback, never the path.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from contextlib import suppress
from dataclasses import dataclass

import psycopg
from django.db import DatabaseError

from runtime.process.background import BackgroundLoop
from runtime.process.local import ProcessLocal
from runtime.store.messaging.listener import can_listen, drain, open_listener
from runtime.store.messaging.streams import notify_run

log = logging.getLogger("fanfold.streams")

# The fallback: how long a waiter trusts the signals before looking anyway. Without a
# listening connection (SQLite) only writes made in this process signal, so look more often.
POLL_SECONDS = 1.0
UNHEARD_POLL_SECONDS = 0.2
_DRAIN_SECONDS = 1.0


class RunSignals:
    """Per-run generation counters of one process, and the waits on them."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._generations: dict[str, int] = {}
        self._everything = 0  # bumped when notifications may have been missed
        self._waiters: dict[str, int] = {}

    def seen(self, run_id: uuid.UUID | str) -> tuple[int, int]:
        """The run's generation now: pass it to `wait` after looking at the database."""
        key = str(run_id)
        with self._changed:
            return self._everything, self._generations.get(key, 0)

    def signal(self, run_id: uuid.UUID | str) -> None:
        key = str(run_id)
        with self._changed:
            if key in self._waiters:  # nobody waits: nothing to remember
                self._generations[key] = self._generations.get(key, 0) + 1
                self._changed.notify_all()

    def signal_all(self) -> None:
        with self._changed:
            self._everything += 1
            self._changed.notify_all()

    def wait(self, run_id: uuid.UUID | str, seen: tuple[int, int], timeout: float) -> bool:
        """Block until the run's generation moves past `seen` or `timeout` passes."""
        key = str(run_id)
        deadline = time.monotonic() + timeout
        with self._changed:
            self._waiters[key] = self._waiters.get(key, 0) + 1
            try:
                while (self._everything, self._generations.get(key, 0)) == seen:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return False
                    self._changed.wait(left)
                return True
            finally:
                self._release(key)

    def watch(self, run_id: uuid.UUID | str) -> None:
        """Count signals for the run from now on (call before the first `seen`)."""
        with self._changed:
            self._waiters[str(run_id)] = self._waiters.get(str(run_id), 0) + 1

    def unwatch(self, run_id: uuid.UUID | str) -> None:
        with self._changed:
            self._release(str(run_id))

    def _release(self, key: str) -> None:
        left = self._waiters.get(key, 0) - 1
        if left > 0:
            self._waiters[key] = left
        else:
            self._waiters.pop(key, None)
            self._generations.pop(key, None)


class _Listener:
    """The body of the listening thread: keeps one LISTEN connection and drains it."""

    def __init__(self, signals: RunSignals) -> None:
        self._signals = signals
        self._raw: psycopg.Connection | None = None

    def __call__(self) -> None:
        if self._raw is None:
            try:
                self._raw = open_listener()
            except psycopg.Error as exc:
                log.warning("stream listener cannot connect (%s); waiters poll meanwhile", exc)
                time.sleep(_DRAIN_SECONDS)
                return
            self._signals.signal_all()  # anything before LISTEN took effect was missed
        try:
            drain(self._raw, self._signals.signal, _DRAIN_SECONDS)
        except psycopg.Error as exc:
            log.warning("stream listener lost its connection (%s); reconnecting", exc)
            with suppress(psycopg.Error):
                self._raw.close()
            self._raw = None

    def close(self) -> None:
        raw, self._raw = self._raw, None
        if raw is not None:
            with suppress(psycopg.Error):
                raw.close()


@dataclass
class _ProcessSignals:
    hub: RunSignals
    listener: _Listener | None = None
    loop: BackgroundLoop | None = None


def _build() -> _ProcessSignals:
    hub = RunSignals()
    if not can_listen():
        return _ProcessSignals(hub)
    listener = _Listener(hub)
    # Interval 0: each pass blocks in the connection for up to _DRAIN_SECONDS itself.
    loop = BackgroundLoop("fanfold-stream-listener", lambda: 0.0, listener)
    return _ProcessSignals(hub, listener, loop)


_local: ProcessLocal[_ProcessSignals] = ProcessLocal(_build)


def signals() -> RunSignals:
    """This process's run signals; starts the listening thread on first use (PostgreSQL)."""
    local = _local.get()
    if local.loop is not None and not local.loop.running:
        local.loop.start()
    return local.hub


def fallback_seconds() -> float:
    """How often a waiter looks at the database when no signal comes."""
    return POLL_SECONDS if can_listen() else UNHEARD_POLL_SECONDS


def signal_local(run_id: uuid.UUID) -> None:
    """Wake the run's waiters in this process (other processes hear the database)."""
    _local.get().hub.signal(run_id)


def announce(run_id: uuid.UUID) -> None:
    """Wake the run's waiters everywhere: notify other processes, signal this one.

    What it announces has committed already; if the notification cannot be sent, readers
    elsewhere learn of it from their next look (the polling fallback), so that is no error.
    """
    try:
        notify_run(run_id)
    except DatabaseError as exc:
        log.warning("run %s: could not notify its readers (%s)", run_id, exc)
    signal_local(run_id)


def stop_listening() -> None:
    """Stop this process's listening thread, if it runs (tests, before dropping the database)."""
    local = _local.get()
    if local.loop is not None and local.listener is not None:
        local.loop.stop()
        local.listener.close()
