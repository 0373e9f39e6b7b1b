"""Counters the benchmark's worker processes keep in Redis: messages consumed per task name,
and the baseline group's completions.

Both sides of a comparison pay the same per-message increment, so neither is favoured. The
counters live in `BENCH_COUNTER_REDIS_URL` (default: Redis db 13 on localhost), whatever the
broker is; the workers count only when that variable is set in their environment.
"""

from __future__ import annotations

import os
import time
from functools import cache
from typing import Any

import redis
from celery.signals import task_prerun

ENV = "BENCH_COUNTER_REDIS_URL"
DEFAULT_URL = "redis://127.0.0.1:6379/13"
CONSUMED = "bench:consumed"


def counter_url() -> str:
    return os.environ.get(ENV) or DEFAULT_URL


@cache
def client() -> redis.Redis:
    return redis.Redis.from_url(counter_url())


def _count_consumed(sender: Any = None, **_: Any) -> None:
    client().hincrby(CONSUMED, getattr(sender, "name", "?"), 1)


def connect_in_worker() -> None:
    """Count every task message a worker process executes (duplicates included)."""
    if os.environ.get(ENV):
        task_prerun.connect(_count_consumed, weak=False, dispatch_uid="bench-consumed")


def reset() -> None:
    client().delete(CONSUMED)


def consumed() -> dict[str, int]:
    raw: dict[bytes, bytes] = client().hgetall(CONSUMED)  # type: ignore[assignment]
    return {k.decode(): int(v) for k, v in raw.items()}


def completed(key: str, total: int) -> None:
    """One baseline task done; the one that completes the set notes the time."""
    if client().incr(key) == total:
        client().set(f"{key}:done", repr(time.time()))


def completion_time(key: str, timeout: float) -> float:
    """When the last of a counted set finished (epoch seconds), waiting up to `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = client().get(f"{key}:done")
        if done is not None:
            return float(done)
        time.sleep(0.01)  # the figure is the completion's own time, not when this sees it
    raise TimeoutError(f"the counted group {key} did not finish in {timeout}s")
