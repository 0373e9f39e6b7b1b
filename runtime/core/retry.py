"""Retry policies and the pure decision of what follows a failed attempt."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

from runtime.core.errors import FatalError, PayloadError, RetryableError


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how late a failed step is tried again.

    The delay before attempt n+1 is `initial_delay * backoff**(n-1)`, capped at `max_delay`;
    with `jitter` a uniformly random fraction of it ("full jitter"). `retry_on` limits retries
    to those exception types; `FatalError` never retries.
    """

    max_attempts: int = 3
    initial_delay: float = 1.0
    backoff: float = 2.0
    max_delay: float = 60.0
    jitter: bool = True
    retry_on: tuple[type[BaseException], ...] = field(default=(Exception,))

    def __post_init__(self) -> None:
        if isinstance(self.initial_delay, timedelta):
            object.__setattr__(self, "initial_delay", self.initial_delay.total_seconds())
        if isinstance(self.max_delay, timedelta):
            object.__setattr__(self, "max_delay", self.max_delay.total_seconds())
        if not isinstance(self.max_attempts, int) or self.max_attempts < 1:
            raise ValueError("RetryPolicy.max_attempts must be an integer >= 1")
        if self.initial_delay < 0 or self.max_delay < 0:
            raise ValueError("RetryPolicy delays must not be negative")
        if self.backoff < 1:
            raise ValueError("RetryPolicy.backoff must be >= 1")
        if not isinstance(self.retry_on, tuple) or not all(
            isinstance(t, type) and issubclass(t, BaseException) for t in self.retry_on
        ):
            raise ValueError("RetryPolicy.retry_on must be a tuple of exception types")

    def base_delay(self, attempt: int) -> float:
        """The un-jittered delay after failed attempt number `attempt` (1-based)."""
        return min(self.max_delay, self.initial_delay * self.backoff ** (attempt - 1))


DEFAULT_POLICY = RetryPolicy()


@dataclass(frozen=True)
class Retry:
    delay: float


@dataclass(frozen=True)
class GiveUp:
    reason: str


def decide(
    policy: RetryPolicy,
    attempt: int,
    exc: BaseException,
    rand: Callable[[], float] = random.random,
) -> Retry | GiveUp:
    """Decide what follows failed attempt number `attempt` that raised `exc`."""
    if isinstance(exc, FatalError | PayloadError):
        return GiveUp("fatal error")
    if not isinstance(exc, policy.retry_on) and not isinstance(exc, RetryableError):
        return GiveUp(f"{type(exc).__name__} is not in retry_on")
    if attempt >= policy.max_attempts:
        return GiveUp(f"{attempt} of {policy.max_attempts} attempts used")
    if isinstance(exc, RetryableError) and exc.retry_after is not None:
        return Retry(exc.retry_after)
    delay = policy.base_delay(attempt)
    if policy.jitter:
        delay = delay * rand()
    return Retry(delay)
