"""Signals: `emit_signal` delivers a payload to every run waiting for it with a matching `match`.

An emit commits the signal first, then finds the open waits it satisfies through their hashed
match keys (runtime.core.matching) and delivers to them in a second transaction. A new wait
commits itself first, then looks for a signal emitted since it began (less its lookback). One
of the two always sees the other, so no signal is lost to a race; a wait takes one signal
(the first delivery closes it).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from runtime import conf
from runtime.core.clock import current_time
from runtime.core.errors import InvalidArguments
from runtime.core.identity import check_idempotency_key, check_name
from runtime.core.jsonvalues import checked
from runtime.messaging.wake import enqueue_woken
from runtime.models import Signal
from runtime.store.messaging.signals import deliver, insert_signal, purge_signals_before

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
                    emitted_by=by, created_at=current_time())  # fmt: skip
    earlier = insert_signal(signal)
    if earlier is not None:
        return EmittedSignal(earlier, 0, created=False)
    return EmittedSignal(signal.id, deliver(signal, enqueue_woken), created=True)


def purge_expired_signals(now: datetime | None = None, batch: int = PURGE_BATCH) -> int:
    """Delete up to `batch` signals older than FANFOLD_SIGNAL_RETENTION; how many."""
    return purge_signals_before((now or current_time()) - conf.get().SIGNAL_RETENTION, batch)
