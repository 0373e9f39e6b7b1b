"""Run values: the latest value of each key a run set (`ctx.set_value`), read from outside.

A value is stored with the position that set it, so a replay of an older `set_value` never
overwrites a newer value. Readers that wait (`get_value(key, wait=S)`) are woken by the run's
notification (runtime.streaming.wakeups), the path stream readers and `RunHandle.wait` use.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from runtime.core.errors import InvalidArguments, RunNotFound, ValueNotFound
from runtime.core.identity import check_name
from runtime.messaging.mailbox import as_run_id
from runtime.models import Run, RunValue
from runtime.store.payload_forms import StoredForms
from runtime.streaming.wakeups import announce, fallback_seconds, signals


def check_key(key: object) -> str:
    """A value key as a run stores it; InvalidArguments if not."""
    try:
        return check_name(key, "value key")
    except ValueError as exc:
        raise InvalidArguments(str(exc)) from None


def store_value(run_id: uuid.UUID, key: str, value: Any, position: int) -> None:
    """Record `value` as the run's value of `key` unless a later position set one; then wake
    the readers that wait for it."""
    now = timezone.now()
    value = StoredForms().form(value, run_id)  # encrypted or offloaded like every payload
    newer = RunValue.objects.filter(run_id=run_id, key=key, position__lte=position)
    if not newer.update(value=value, position=position, updated_at=now):
        try:
            with transaction.atomic():
                RunValue.objects.create(
                    run_id=run_id, key=key, value=value, position=position, updated_at=now
                )
        except IntegrityError:  # set meanwhile (a replay racing a zombie): keep the later one
            newer.update(value=value, position=position, updated_at=now)
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
    if not Run.objects.filter(id=rid).exists():
        raise RunNotFound(f"no run {rid}")
    values = RunValue.objects.filter(run_id=rid, key=key).values_list("value", flat=True)
    if wait is None:
        found = list(values[:1])
        if not found:
            raise ValueNotFound(f"run {rid} has set no value {key!r}")
        return found[0]
    deadline = time.monotonic() + float(wait)
    hub = signals()
    hub.watch(rid)
    try:
        while True:
            seen = hub.seen(rid)
            found = list(values[:1])
            if found:
                return found[0]
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"run {rid} set no value {key!r} within {wait} s")
            hub.wait(rid, seen, min(left, fallback_seconds()))
    finally:
        hub.unwatch(rid)
