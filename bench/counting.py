"""Counters the benchmark's worker processes keep in Redis: messages consumed per task name,
the fan-out branches those messages ran, and the baseline group's completions.

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
from celery.signals import task_postrun, task_prerun

from runtime.core.branch_dispatch import summary_counts
from runtime.dispatch import RUN_BRANCH

ENV = "BENCH_COUNTER_REDIS_URL"
DEFAULT_URL = "redis://127.0.0.1:6379/13"
CONSUMED = "bench:consumed"
BRANCHES = f"{RUN_BRANCH}:branches"  # the field counting branches taken from its messages


def counter_url() -> str:
    return os.environ.get(ENV) or DEFAULT_URL


@cache
def client() -> redis.Redis:
    return redis.Redis.from_url(counter_url())


def _count_consumed(sender: Any = None, **_: Any) -> None:
    client().hincrby(CONSUMED, getattr(sender, "name", "?"), 1)


def branches_taken(retval: Any) -> int:
    """How many branches one run_branch message ran or found already done, from what the task
    returned: "completed" for a single branch, "completed:7,published:2,skipped:1" for a
    chunk (the published ones left as messages of their own, counted when those run)."""
    if not isinstance(retval, str):
        return 1  # it raised: one branch's message, taken
    counts = summary_counts(retval)
    return counts.total() - counts["published"]


def _count_branches(sender: Any = None, retval: Any = None, **_: Any) -> None:
    if getattr(sender, "name", None) == RUN_BRANCH:
        client().hincrby(CONSUMED, BRANCHES, branches_taken(retval))


def connect_in_worker() -> None:
    """Count every task message a worker process executes (duplicates included), and the
    fan-out branches in those messages."""
    if os.environ.get(ENV):
        task_prerun.connect(_count_consumed, weak=False, dispatch_uid="bench-consumed")
        task_postrun.connect(_count_branches, weak=False, dispatch_uid="bench-branches")


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
