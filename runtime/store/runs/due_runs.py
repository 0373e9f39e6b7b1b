"""The run timers an in-process driver (runtime.testing) reads: which runs are due, and when
the next one falls due, in one query."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q

from runtime.core.states import ACTIVE_RUN_STATES
from runtime.models import Run


@dataclass(frozen=True)
class RunTimers:
    """`due`: the active, admitted runs due by then that nobody live holds, highest priority
    first, then the longest due; `next_wake`: the earliest timer after then (None: none)."""

    due: list[uuid.UUID]
    next_wake: datetime | None
    watched_finished: bool = False  # whether the run `run_timers` was asked about finished


def run_timers(now: datetime, watched: uuid.UUID | None = None, limit: int = 200) -> RunTimers:
    """The run timers as of `now` (a timer that fell, or a start or wake-up whose message
    went nowhere, counts as due), and whether run `watched` finished, in one query."""
    timed = Q(status__in=ACTIVE_RUN_STATES, wake_at__isnull=False)
    rows = list(
        Run.objects.filter(timed | Q(id=watched) if watched else timed)
        .order_by("wake_at")
        .values_list(
            "id", "wake_at", "priority", "admitted", "lease_token", "lease_expires_at", "status"
        )[:limit]
    )
    due: list[tuple[int, datetime, uuid.UUID]] = []
    later: datetime | None = None
    finished = False
    for run_id, wake, priority, admitted, token, expires, status in rows:
        if run_id == watched and status not in ACTIVE_RUN_STATES:
            finished = True
        if wake is None or status not in ACTIVE_RUN_STATES:
            continue
        if wake > now:
            later = wake if later is None else min(later, wake)
        elif admitted and (token is None or (expires is not None and expires < now)):
            due.append((-priority, wake, run_id))
    return RunTimers([run_id for *_, run_id in sorted(due)], later, finished)
