"""Polling rules of `ctx.wait_for_condition`: the delays between polls and the deadline.

Pure: runtime.durable.conditions runs the polls and records them; this module decides when the next
poll is due. The delay after poll n is `interval * backoff**(n - 1)`, capped at
`max_interval`; with a `timeout` the last delay is cut so that one final poll happens at the
deadline, and a condition still unmet then times out.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from runtime.core.callbacks import as_seconds

TIMED_OUT = "ConditionTimedOut"


@dataclass(frozen=True, slots=True)
class PollTerms:
    """How often to poll (seconds) and for how long (None: no limit)."""

    interval: float = 5.0
    backoff: float = 1.0
    max_interval: float | None = None
    timeout: float | None = None

    @classmethod
    def of(
        cls,
        interval: Any = 5.0,
        backoff: Any = 1.0,
        max_interval: Any = None,
        timeout: Any = None,
    ) -> PollTerms:
        """Checked terms; ValueError for a negative or non-numeric value, or backoff < 1."""
        if isinstance(backoff, bool) or not isinstance(backoff, int | float) or not backoff >= 1:
            raise ValueError("backoff must be a number of at least 1")
        every = as_seconds(interval, "interval")
        if every is None:
            raise ValueError("interval must be a non-negative number of seconds or a timedelta")
        return cls(
            every,
            float(backoff),
            as_seconds(max_interval, "max_interval"),
            as_seconds(timeout, "timeout"),
        )

    def as_input(self) -> dict[str, float | None]:
        return {
            "interval": self.interval,
            "backoff": self.backoff,
            "max_interval": self.max_interval,
            "timeout": self.timeout,
        }

    def delay_after(self, polls: int) -> float:
        """Seconds to wait after the `polls`-th unmet poll, before the deadline cut."""
        delay = self.interval * self.backoff ** max(polls - 1, 0)
        return delay if self.max_interval is None else min(delay, self.max_interval)

    def deadline(self, first_poll: datetime) -> datetime | None:
        return None if self.timeout is None else first_poll + timedelta(seconds=self.timeout)

    def next_poll(self, first_poll: datetime, polls: int, now: datetime) -> datetime | None:
        """When to poll again after `polls` unmet polls, or None: the wait has timed out."""
        deadline = self.deadline(first_poll)
        if deadline is not None and now >= deadline:
            return None
        due = now + timedelta(seconds=self.delay_after(polls))
        return due if deadline is None else min(due, deadline)


def met(value: Any) -> bool:
    """A poll's result satisfies the condition unless it is None or False."""
    return value is not None and value is not False


def timed_out_error(name: str, terms: PollTerms, polls: int) -> dict[str, Any]:
    """The step error recorded when the condition's `timeout` passed."""
    return {
        "type": TIMED_OUT,
        "message": f"condition {name!r} was not met within {terms.timeout} s ({polls} polls)",
    }
