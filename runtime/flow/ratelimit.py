"""`@step(rate_limit="N/s|m|h")`: a body starts only at its turn, across every worker.

A step whose turn is in the future holds no worker: the inline path suspends the run until
then (like a retry delay), a fan-out branch is published again for then. Turns are kept per
(step, attempt) by runtime.store.ratelimit, so the attempt that comes back keeps its turn.

Resuming a run takes tens of milliseconds (the delayed message, the claim, the replay), and
how many varies: bodies that all resumed exactly at their turns would start late by varying
amounts and crowd some seconds. So a suspended attempt is woken `LEAD` early, and a wait of at
most `SHORT_WAIT` (the rest of that lead, or a turn that is close anyway) is slept out in the
worker thread: a worker is held for a fraction of a second at most, and starts are on time.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from runtime.core.identity import step_id
from runtime.dispatch import publish_later
from runtime.models import Step, StepStatus
from runtime.registry import StepFunction, registry
from runtime.store.ratelimit import forget_reservations, reserve_turn, retake_turn

LEAD = timedelta(milliseconds=150)
SHORT_WAIT = timedelta(milliseconds=250)
# A body starts at most this long after its turn, so no window of a period holds more than
# N + N * LATE / period + 1 starts; an attempt later than that takes a new turn (at most
# MAX_RETAKES times, then it starts anyway rather than starve on a stalled machine).
LATE = timedelta(milliseconds=50)
MAX_RETAKES = 3
KEEP_RESERVATIONS = timedelta(hours=1)


def turn_wait(
    fn: Callable[..., Any] | StepFunction[Any, Any], run_id: uuid.UUID, position: int, attempt: int
) -> datetime | None:
    """None once this attempt may start its body (after a short wait in this thread, if its
    turn is that close), else when to wake up to take its turn (suspend until then).

    Free for steps without a rate limit: no query.
    """
    if not isinstance(fn, StepFunction) or fn.rate_limit is None:
        return None
    spacing, sid = fn.rate_limit.spacing, step_id(run_id, position)
    asked = timezone.now()
    turn = reserve_turn(fn.name, spacing, sid, attempt, asked)
    for _ in range(MAX_RETAKES):
        if asked - turn > LATE:
            # Back too late for a turn kept from before: starting now would crowd the turns
            # of the next second. Leave that turn unused and queue again.
            asked = timezone.now()
            turn = retake_turn(fn.name, spacing, sid, attempt, asked)
            continue
        wait = turn - timezone.now()
        if wait > SHORT_WAIT:
            return turn - LEAD
        if wait <= timedelta(0):
            return None
        time.sleep(wait.total_seconds())
        asked = timezone.now()  # an oversleep past LATE is late too
    return None


def forget_old_turns() -> int:
    """Drop reservations of turns long past (their attempts started or were abandoned)."""
    return forget_reservations(timezone.now() - KEEP_RESERVATIONS)


def branch_turn_later(run_id: uuid.UUID, group_position: int, position: int, attempt: int) -> bool:
    """For a fan-out branch about to claim its step: True if its turn is later, in which case
    its message is published again for then and the step's wake_at says when (so the fan-out
    sweep does not take it for a lost message). Free unless some step has a rate limit."""
    if not any(st.rate_limit is not None for st in registry.steps.values()):
        return False
    sid = step_id(run_id, position)
    name = Step.objects.filter(id=sid).values_list("name", flat=True).first()
    fn = registry.steps.get(name) if name is not None else None
    if fn is None:
        return False
    wake = turn_wait(fn, run_id, position, attempt)
    if wake is None:
        return False
    Step.objects.filter(id=sid, status=StepStatus.PENDING).update(wake_at=wake)
    countdown = max((wake - timezone.now()).total_seconds(), 0.0)
    publish_later(run_id, group_position, position, attempt, countdown)
    return True
