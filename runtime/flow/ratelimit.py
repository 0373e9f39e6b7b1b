"""`@step(rate_limit="N/s|m|h")`: a body starts only at its turn, across every worker.

A step whose turn is in the future holds no worker: the inline path suspends the run until
then (like a retry delay), a fan-out branch is published again for then. Turns are kept per
(step, attempt) by runtime.store.ratelimit, so the attempt that comes back runs at once.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from runtime.core.identity import step_id
from runtime.registry import StepFunction
from runtime.store.ratelimit import forget_reservations, reserve_turn

# A turn this close is taken now: a suspend and a resume would cost more than the wait.
ON_TIME = timedelta(milliseconds=2)
KEEP_RESERVATIONS = timedelta(hours=1)


def turn_wait(
    fn: Callable[..., Any] | StepFunction[Any, Any], run_id: uuid.UUID, position: int, attempt: int
) -> datetime | None:
    """None if this attempt may start its body now, else the time its turn comes.

    Free for steps without a rate limit: no query.
    """
    if not isinstance(fn, StepFunction) or fn.rate_limit is None:
        return None
    now = timezone.now()
    turn = reserve_turn(fn.name, fn.rate_limit.spacing, step_id(run_id, position), attempt, now)
    return None if turn - now <= ON_TIME else turn


def forget_old_turns() -> int:
    """Drop reservations of turns long past (their attempts started or were abandoned)."""
    return forget_reservations(timezone.now() - KEEP_RESERVATIONS)
