"""`send` and `emit_signal`: the public calls, from anywhere (workflow code included)."""

from __future__ import annotations

import uuid
from typing import Any

from runtime.core.current import active_step, current_sender
from runtime.messaging.mailbox import send_message
from runtime.messaging.signals import emit


def send(
    run_id: uuid.UUID | str, topic: str, value: Any, *, idempotency_key: str | None = None
) -> int:
    """Put `value` in the mailbox of run `run_id` under `topic`; returns the message's id.

    A message sent before the run reaches `ctx.recv(topic)` waits for it; each is received
    once, in send order per topic. A repeated `idempotency_key` is a no-op (the first message's
    id is returned). Called from workflow code (outside a step) the send is durable: it happens
    once however often the run replays. Raises RunNotFound, RunFinished, PayloadError,
    PayloadTooLarge or InvalidArguments.
    """
    sender = current_sender()
    if sender is not None and active_step() is None:
        return sender.send_durably(run_id, topic, value, idempotency_key)
    return send_message(run_id, topic, value, idempotency_key=idempotency_key).id


def emit_signal(name: str, payload: Any, idempotency_key: str | None = None) -> int:
    """Deliver signal `name` with `payload` to every run waiting for it in
    `ctx.wait_for_signal(name, match=...)` whose match the payload's top-level items satisfy;
    returns how many runs took it (0 for a repeated `idempotency_key`). The signal is kept for
    FANFOLD_SIGNAL_RETENTION so that waits with a `lookback` can still take it.

    From workflow code (outside a step) the emit is recorded at a position (keyed by the run
    and position unless a key is given): a replay returns the recorded count, emitting nothing.
    """
    sender = current_sender()
    if sender is not None and active_step() is None:
        return sender.emit_durably(name, payload, idempotency_key)
    return emit(name, payload, idempotency_key).delivered
