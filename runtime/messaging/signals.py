"""Signals: `emit_signal` delivers a payload to every run waiting for it with a matching `match`.

An emit commits the signal first, then finds the open waits it satisfies through their hashed
match keys (runtime.core.matching) and delivers to them in a second transaction. A new wait
commits itself first, then looks for a signal emitted since it began (less its lookback). One
of the two always sees the other, so no signal is lost to a race; a wait takes one signal
(the first delivery closes it).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from runtime import conf
from runtime.core.errors import InvalidArguments
from runtime.core.identity import check_idempotency_key, check_name
from runtime.core.jsonvalues import checked
from runtime.core.matching import candidate_keys, keyset_key, match_key, matches
from runtime.messaging.wake import wake_runs_txn
from runtime.models import Signal, SignalKeyset, SignalWait

_LOOKBACK_BATCH = 200  # signals read at a time when a new wait looks back
PURGE_BATCH = 1000  # signals deleted per statement by the retention purge


@dataclass(frozen=True)
class EmittedSignal:
    """What an emit did: the signal's id, how many runs took it, False for a repeated key."""

    id: int
    delivered: int
    created: bool


def check_signal_name(name: object) -> str:
    """A signal name as stored; InvalidArguments if not."""
    try:
        return check_name(name, "signal")
    except ValueError as exc:
        raise InvalidArguments(str(exc)) from None


def emit(
    name: str,
    payload: Any,
    idempotency_key: str | None = None,
    by: dict[str, Any] | None = None,
) -> EmittedSignal:
    """Emit signal `name` with `payload` to every run waiting for it whose match it satisfies.

    Raises InvalidArguments (name, key), PayloadError or PayloadTooLarge. A repeated
    `idempotency_key` (per name) delivers nothing again and returns the first signal.
    """
    name = check_signal_name(name)
    if idempotency_key is not None:
        try:
            check_idempotency_key(idempotency_key)
        except ValueError as exc:
            raise InvalidArguments(str(exc)) from None
    payload, _ = checked(payload, f"signal {name!r} payload", conf.get().MAX_PAYLOAD_BYTES)
    signal = Signal(name=name, payload=payload, idempotency_key=idempotency_key,
                    emitted_by=by, created_at=timezone.now())  # fmt: skip
    if idempotency_key is not None:
        earlier = _earlier(name, idempotency_key)
        if earlier is not None:
            return EmittedSignal(earlier, 0, created=False)
        try:
            with transaction.atomic():
                signal.save(force_insert=True)
        except IntegrityError:
            earlier = _earlier(name, idempotency_key)
            if earlier is None:
                raise
            return EmittedSignal(earlier, 0, created=False)
    else:
        signal.save(force_insert=True)
    return EmittedSignal(signal.id, _deliver(signal), created=True)


def _earlier(name: str, key: str) -> int | None:
    found = Signal.objects.filter(name=name, idempotency_key=key)
    return found.values_list("id", flat=True).first()


def _deliver(signal: Signal) -> int:
    """Deliver a committed signal to the open waits it satisfies; how many runs took it."""
    keysets = SignalKeyset.objects.filter(name=signal.name).values_list("keys", flat=True)
    keys = candidate_keys(signal.name, signal.payload, list(keysets))
    if not keys:
        return 0
    open_waits = SignalWait.objects.filter(
        match_key__in=keys, closed_at__isnull=True, accepts_from__lte=signal.created_at
    )
    # An emit that matches no wait returns after a plain read, without a transaction's two more
    # round trips. Safe: the signal is committed, so a wait committed after this read finds it.
    if not open_waits.exists():
        return 0
    now = timezone.now()
    with transaction.atomic():
        waits = list(open_waits.select_for_update().order_by("pk").values_list("pk", "run_id"))
        if not waits:
            return 0
        SignalWait.objects.filter(pk__in=[pk for pk, _ in waits]).update(
            closed_at=now, signal_id=signal.id, payload=signal.payload
        )
        wake_runs_txn([run_id for _, run_id in waits], now)
    return len(waits)


def open_wait(
    run_id: uuid.UUID,
    position: int,
    name: str,
    match: dict[str, Any],
    began: datetime,
    lookback: timedelta,
) -> None:
    """Register the run's wait at `position` (once), then take the earliest signal it may
    already have: one emitted since `began - lookback`."""
    now = timezone.now()
    keys = sorted(match)
    keyset = keyset_key(name, keys)
    if not SignalKeyset.objects.filter(key=keyset).exists():
        try:
            with transaction.atomic():
                SignalKeyset.objects.create(key=keyset, name=name, keys=keys, created_at=now)
        except IntegrityError:
            pass  # registered meanwhile by another wait
    wait = SignalWait(run_id=run_id, position=position, name=name, match=match,
                      match_key=match_key(name, match), accepts_from=began - lookback,
                      created_at=now)  # fmt: skip
    try:
        with transaction.atomic():
            wait.save(force_insert=True)
    except IntegrityError:
        return  # registered by an earlier execution, which looked back already
    _look_back(wait)


def _look_back(wait: SignalWait) -> None:
    # By id: the order signals were emitted in (the earliest match wins).
    recent = Signal.objects.filter(name=wait.name, created_at__gte=wait.accepts_from).order_by("id")
    after = 0
    while True:
        batch = list(recent.filter(id__gt=after).values_list("id", "payload")[:_LOOKBACK_BATCH])
        for signal_id, payload in batch:
            if matches(wait.match, payload):
                # Unless an emit delivered to it meanwhile (then that one counts).
                SignalWait.objects.filter(pk=wait.pk, closed_at__isnull=True).update(
                    closed_at=timezone.now(), signal_id=signal_id, payload=payload
                )
                return
        if len(batch) < _LOOKBACK_BATCH:
            return
        after = batch[-1][0]


def close_wait_timed_out(run_id: uuid.UUID, position: int) -> SignalWait | None:
    """Close the wait at `position` as timed out unless a signal got there first; returns the
    wait as it is then (its payload set if a signal was delivered)."""
    SignalWait.objects.filter(run_id=run_id, position=position, closed_at__isnull=True).update(
        closed_at=timezone.now()
    )
    return SignalWait.objects.filter(run_id=run_id, position=position).first()


def purge_expired_signals(now: datetime | None = None, batch: int = PURGE_BATCH) -> int:
    """Delete up to `batch` signals older than FANFOLD_SIGNAL_RETENTION; how many."""
    cutoff = (now or timezone.now()) - conf.get().SIGNAL_RETENTION
    old = Signal.objects.filter(created_at__lt=cutoff).order_by("id").values_list("id", flat=True)
    ids = list(old[:batch])
    if not ids:
        return 0
    deleted, _ = Signal.objects.filter(id__in=ids).delete()
    return deleted
