"""`@step(rate_limit="N/s|m|h")`: a body starts only at its turn, across every worker.

A step whose turn is in the future holds no worker: the inline path suspends the run until
then (like a retry delay), a fan-out branch hands its claim back and is published again for
then. Turns are kept per (step, attempt) by runtime.store.flow.ratelimit, so the attempt that comes
back keeps its turn.

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

from runtime.core.clock import current_time
from runtime.core.identity import step_id
from runtime.dispatch import publish_later
from runtime.registry import StepFunction, registry
from runtime.store.flow.ratelimit import (
    forget_reservations,
    hand_back_claim,
    reserve_turn,
    retake_turn,
)

LEAD = timedelta(milliseconds=150)
SHORT_WAIT = timedelta(milliseconds=250)
# A body starts at most this long after its turn, so no window of a period holds more than
# N + N * LATE / period + 1 starts. An attempt that finds itself later than that (back late
# from a suspend, a slow reservation, an oversleep) leaves its turn unused and takes a new
# one; after MAX_RETAKES of those in a row it suspends briefly and tries again: it never
# starts off its turn.
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
    turn = reserve_turn(fn.name, spacing, sid, attempt, current_time())
    retakes = 0
    while True:
        # Lateness is measured after the reservation and after every wait, right before the
        # body would start: time spent in the query or oversleeping counts.
        now = current_time()
        if now - turn > LATE:
            if retakes == MAX_RETAKES:
                return now  # a stalled process: suspend, and take a turn when back
            # Starting now would crowd the turns of the next period: queue again.
            turn = retake_turn(fn.name, spacing, sid, attempt, now)
            retakes += 1
            continue
        wait = turn - now
        if wait > SHORT_WAIT:
            return turn - LEAD
        if wait <= timedelta(0):
            return None
        time.sleep(wait.total_seconds())


def forget_old_turns() -> int:
    """Drop reservations of turns long past (their attempts started or were abandoned)."""
    return forget_reservations(current_time() - KEEP_RESERVATIONS)


def branch_turn_later(
    run_id: uuid.UUID,
    group_position: int,
    position: int,
    attempt: int,
    name: str,
    priority: int = 0,
) -> bool:
    """For a fan-out branch that has just claimed `attempt` of its step `name`: True if its
    turn is later. Then the claim is handed back (the step is pending at the previous attempt
    again, and its wake_at says when, so the fan-out sweep does not take it for a lost
    message) and the attempt is published again for then, at the run's `priority`.

    Checked after the claim, which read the step's name anyway: a step without a rate limit
    costs no query, and the body starts right after the check.
    """
    fn = registry.steps.get(name)
    if fn is None or fn.rate_limit is None:
        return False
    wake = turn_wait(fn, run_id, position, attempt)
    if wake is None:
        return False
    # False: the branch was cancelled meanwhile.
    if hand_back_claim(run_id, step_id(run_id, position), attempt, wake):
        countdown = max((wake - current_time()).total_seconds(), 0.0)
        publish_later(run_id, group_position, position, attempt, countdown, priority=priority)
    return True
