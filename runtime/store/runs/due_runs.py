"""The run timers an in-process driver (runtime.testing) reads: which runs are due, and when
the next one falls due, in one query."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from runtime.models import Run


@dataclass(frozen=True)
class RunTimers:
    """`due`: the active, admitted runs due by then that nobody live holds, highest priority
    first, then the longest due; `next_wake`: the earliest timer after then (None: none)."""

    due: list[uuid.UUID]
    next_wake: datetime | None


def run_timers(now: datetime, limit: int = 200) -> RunTimers:
    """The run timers as of `now` (a timer that fell, or a start or wake-up whose message
    went nowhere, counts as due)."""
    rows = list(
        Run.objects.active()
        .filter(wake_at__isnull=False)
        .order_by("wake_at")
        .values_list("id", "wake_at", "priority", "admitted", "lease_token", "lease_expires_at")[
            :limit
        ]
    )
    due: list[tuple[int, datetime, uuid.UUID]] = []
    later: datetime | None = None
    for run_id, wake, priority, admitted, token, expires in rows:
        if wake is None:
            continue
        if wake > now:
            later = wake if later is None else min(later, wake)
        elif admitted and (token is None or (expires is not None and expires < now)):
            due.append((-priority, wake, run_id))
    return RunTimers([run_id for *_, run_id in sorted(due)], later)
