"""How a woken run is enqueued: the callback runtime.store.messaging.wakes calls after commit."""

from __future__ import annotations

import uuid

from runtime.dispatch import enqueue_run_soon


def enqueue_woken(run_id: uuid.UUID, priority: int, warm_queue: str | None = None) -> None:
    """Enqueue a run that a message, a value or a signal woke.

    Its wake is committed (the run is due now), so the message leaves from the background
    publisher instead of before the emit or send returns: a burst of wake-ups goes as a few
    batch messages (runtime.core.run_batches), and a message lost on the way is sent again by
    the run sweep, as for any due run. A run that a worker node keeps parked goes to that
    node's `warm_queue` (runtime.warm.routing).
    """
    enqueue_run_soon(run_id, priority=priority, queue=warm_queue)
