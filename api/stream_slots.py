"""The cap on a user's open streams (FANFOLD_MAX_STREAMS_PER_USER), across web processes.

Each open stream holds one of the user's slots until its response closes. On PostgreSQL a slot
is an advisory lock (runtime.store.messaging.stream_slots): every gunicorn process sees it, and a
process that dies frees its slots with its sessions. On other databases (SQLite: one machine, for
development) the slots are counted in this process only.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator

from django.db import connection

from api.request_errors import TooManyStreams
from runtime import conf
from runtime.store.messaging import stream_slots

Release = Callable[[], None]

_local_lock = threading.Lock()
_local_open: Counter[int] = Counter()


def hold_stream_slot(user_id: int) -> Release:
    """Take one of the user's stream slots, or raise TooManyStreams (429) if all are held.

    Returns the function that gives the slot back; it may be called more than once.
    """
    cap = conf.get().MAX_STREAMS_PER_USER
    if connection.vendor == "postgresql":
        slot = stream_slots.take_slot(user_id, cap)
        if slot is None:
            raise _too_many(cap)
        return _once(lambda: stream_slots.release_slot(user_id, slot))
    with _local_lock:
        if _local_open[user_id] >= cap:
            raise _too_many(cap)
        _local_open[user_id] += 1
    return _once(lambda: _release_local(user_id))


class SlotHoldingStream:
    """A streaming response's content that gives its slot back when the response closes,
    whether or not the events were ever iterated (a generator's `finally` runs only if so)."""

    def __init__(self, events: Iterator[bytes], release: Release) -> None:
        self._events = events
        self._release = release

    def __iter__(self) -> Iterator[bytes]:
        return self._events

    def close(self) -> None:
        try:
            close = getattr(self._events, "close", None)
            if close is not None:
                close()
        finally:
            self._release()


def _too_many(cap: int) -> TooManyStreams:
    return TooManyStreams(
        f"this user already has {cap} open streams (FANFOLD_MAX_STREAMS_PER_USER); "
        "close one or wait for a window to end"
    )


def _release_local(user_id: int) -> None:
    with _local_lock:
        _local_open[user_id] -= 1
        if _local_open[user_id] <= 0:
            del _local_open[user_id]


def _once(release: Release) -> Release:
    done = threading.Event()

    def release_once() -> None:
        if not done.is_set():
            done.set()
            release()

    return release_once
