"""Signals and the waits for them: a signal inserted once per idempotency key, delivered to
the open waits it satisfies under their row locks, a new wait registered and looking back,
and expired signals purged (runtime.messaging.signals checks what is emitted)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import OuterRef, Subquery

from runtime.core.clock import current_time
from runtime.core.matching import candidate_keys, keyset_key, match_key, matches
from runtime.models import RunStatus, Signal, SignalKeyset, SignalWait
from runtime.store.dialect import postgres
from runtime.store.messaging.signal_statements import (
    deliver_pg,
    insert_signal_pg,
    keysets_pg,
    wait_at_pg,
)
from runtime.store.messaging.wakes import Enqueue, wake_runs_txn

_LOOKBACK_BATCH = 200  # signals read at a time when a new wait looks back


def insert_signal(signal: Signal) -> int | None:
    """Insert `signal`, unless a signal with its name and idempotency key exists: then its id
    (and nothing is inserted), else None."""
    key = signal.idempotency_key
    if key is None:
        if postgres():
            insert_signal_pg(signal)  # prepared: an emit's first round trip
        else:
            signal.save(force_insert=True)
        return None
    earlier = _earlier(signal.name, key)
    if earlier is not None:
        return earlier
    try:
        with transaction.atomic():
            signal.save(force_insert=True)
    except IntegrityError:
        earlier = _earlier(signal.name, key)
        if earlier is None:
            raise
        return earlier
    return None


def _earlier(name: str, key: str) -> int | None:
    found = Signal.objects.filter(name=name, idempotency_key=key)
    return found.values_list("id", flat=True).first()


def deliver(signal: Signal, enqueue: Enqueue) -> int:
    """Deliver a committed signal to the open waits it satisfies; how many runs took it."""
    if postgres():
        keysets = keysets_pg(signal.name)
    else:
        keysets = list(SignalKeyset.objects.filter(name=signal.name).values_list("keys", flat=True))
    keys = candidate_keys(signal.name, signal.payload, keysets)
    if not keys:
        return 0
    if postgres() and not connection.in_atomic_block:
        return _deliver_pg(signal, keys, enqueue)
    open_waits = SignalWait.objects.filter(
        match_key__in=keys, closed_at__isnull=True, accepts_from__lte=signal.created_at
    )
    # An emit that matches no wait returns after a plain read, without a transaction's two more
    # round trips. Safe: the signal is committed, so a wait committed after this read finds it.
    if not open_waits.exists():
        return 0
    now = current_time()
    with transaction.atomic():
        waits = list(open_waits.select_for_update().order_by("pk").values_list("pk", "run_id"))
        if not waits:
            return 0
        SignalWait.objects.filter(pk__in=[pk for pk, _ in waits]).update(
            closed_at=now, signal_id=signal.id, payload=signal.payload
        )
        wake_runs_txn([run_id for _, run_id in waits], now, enqueue)
    return len(waits)


def _deliver_pg(signal: Signal, keys: list[str], enqueue: Enqueue) -> int:
    """`deliver` in one statement (runtime.store.messaging.signal_statements); the waiting
    runs are enqueued once it committed."""
    closed, woken = deliver_pg(keys, signal.id, signal.payload, signal.created_at, current_time())
    for run_id, status, priority, warm_queue in sorted(woken, key=lambda row: row[0]):
        if status == RunStatus.WAITING:  # a running run replays when its suspend finds it
            enqueue(run_id, priority, warm_queue)
    return closed


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
    now = current_time()
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
                    closed_at=current_time(), signal_id=signal_id, payload=payload
                )
                return
        if len(batch) < _LOOKBACK_BATCH:
            return
        after = batch[-1][0]


def close_wait_timed_out(run_id: uuid.UUID, position: int) -> SignalWait | None:
    """Close the wait at `position` as timed out unless a signal got there first; returns the
    wait as it is then (its payload set if a signal was delivered)."""
    SignalWait.objects.filter(run_id=run_id, position=position, closed_at__isnull=True).update(
        closed_at=current_time()
    )
    return wait_at(run_id, position)


def purge_signals_before(cutoff: datetime, batch: int) -> int:
    """Delete up to `batch` signals emitted before `cutoff`; how many."""
    old = Signal.objects.filter(created_at__lt=cutoff).order_by("id").values_list("id", flat=True)
    ids = list(old[:batch])
    if not ids:
        return 0
    deleted, _ = Signal.objects.filter(id__in=ids).delete()
    return deleted


def wait_at(run_id: uuid.UUID, position: int) -> SignalWait | None:
    """The run's signal wait at `position`, as it is now, or None; read with `emitted_by`, who
    emitted the signal it took through the API (None if nobody did, or it took none), so that
    a resume reads its wait in one round trip."""
    if postgres():
        return wait_at_pg(run_id, position)
    emitter = Signal.objects.filter(id=OuterRef("signal_id")).values("emitted_by")[:1]
    found = SignalWait.objects.filter(run_id=run_id, position=position)
    return found.annotate(emitted_by=Subquery(emitter)).first()


def emitter_of(signal_id: int) -> Any:
    """Who emitted the signal through the API (its `by`), or None."""
    return Signal.objects.filter(id=signal_id).values_list("emitted_by", flat=True).first()
