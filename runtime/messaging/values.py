"""Run values: the latest value of each key a run set (`ctx.set_value`), read from outside.

A value is stored with the position that set it, so a replay of an older `set_value` never
overwrites a newer value. Readers that wait (`get_value(key, wait=S)`) are woken by the run's
notification (runtime.streaming.wakeups), the path stream readers and `RunHandle.wait` use.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from runtime.core.errors import InvalidArguments, RunNotFound, ValueNotFound
from runtime.core.identity import as_run_id, check_name
from runtime.store.messaging.values import latest_value, run_exists, upsert_value
from runtime.streaming.wakeups import announce, fallback_seconds, signal_local, signals

_MISSING: Any = object()


def check_key(key: object) -> str:
    """A value key as a run stores it; InvalidArguments if not."""
    try:
        return check_name(key, "value key")
    except ValueError as exc:
        raise InvalidArguments(str(exc)) from None


def store_value(run_id: uuid.UUID, key: str, value: Any, position: int) -> None:
    """Record `value` as the run's value of `key` unless a later position set one; then wake
    the readers that wait for it."""
    if upsert_value(run_id, key, value, position, notify=True):
        signal_local(run_id)  # the set's own statement notified the other processes
    else:
        announce(run_id)


def get_value(run_id: uuid.UUID | str, key: str, wait: float | None = None) -> Any:
    """The latest committed value of `key` set by the run.

    Without `wait` raises ValueNotFound when there is none; with `wait` (seconds) waits up to
    that long for a first one, then raises TimeoutError. RunNotFound for an unknown run.
    """
    key = check_key(key)
    rid = as_run_id(run_id)
    if wait is not None and (isinstance(wait, bool) or not wait >= 0):
        raise InvalidArguments("wait must be a non-negative number of seconds")
    if not run_exists(rid):
        raise RunNotFound(f"no run {rid}")
    if wait is None:
        found = latest_value(rid, key, _MISSING)
        if found is _MISSING:
            raise ValueNotFound(f"run {rid} has set no value {key!r}")
        return found
    deadline = time.monotonic() + float(wait)
    hub = signals()
    hub.watch(rid)
    try:
        while True:
            seen = hub.seen(rid)
            found = latest_value(rid, key, _MISSING)
            if found is not _MISSING:
                return found
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"run {rid} set no value {key!r} within {wait} s")
            hub.wait(rid, seen, min(left, fallback_seconds()))
    finally:
        hub.unwatch(rid)
