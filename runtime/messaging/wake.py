"""How a woken run is enqueued: the callback runtime.store.messaging.wakes calls after commit."""

from __future__ import annotations

import uuid

from runtime.dispatch import enqueue_run


def enqueue_woken(run_id: uuid.UUID, priority: int) -> None:
    """Enqueue a run that a message, a value or a signal woke."""
    enqueue_run(run_id, priority=priority)
