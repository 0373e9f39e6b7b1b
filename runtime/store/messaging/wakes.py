"""Waking runs from outside: a message, a value or a signal made them due now."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from datetime import datetime
from functools import partial

from django.db import transaction
from django.db.models import F

from runtime.models import ACTIVE_RUN_STATES, Run, RunStatus

# Called once the wake committed, for each woken waiting run: (id, priority, the queue of the
# worker node that keeps it parked or None: runtime.warm.routing).
Enqueue = Callable[[uuid.UUID, int, str | None], object]


def wake_runs_txn(run_ids: Iterable[uuid.UUID], now: datetime, enqueue: Enqueue) -> int:
    """Mark these runs as woken (a suspend that raced this replays instead) and due now, and
    call `enqueue(run_id, priority, warm_queue)` for the waiting ones after commit; how many
    active runs there were. Call inside a transaction."""
    ids = sorted(set(run_ids))
    if not ids:
        return 0
    active = Run.objects.filter(id__in=ids, status__in=ACTIVE_RUN_STATES)
    rows = list(active.order_by("pk").values_list("id", "status", "priority", "warm_queue"))
    # Due now: if the enqueue is lost, the sweep still finds the run.
    active.update(wakeups=F("wakeups") + 1, wake_at=now, updated_at=now)
    for run_id, status, priority, warm_queue in rows:
        # A running run replays when its suspend finds the wake-up; a pending one starts anyway.
        if status == RunStatus.WAITING:
            transaction.on_commit(partial(enqueue, run_id, priority, warm_queue))
    return len(rows)
