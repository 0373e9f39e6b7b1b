"""Workflows and steps the fan-out integration tests share, and a body-call counter."""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from typing import Any

from runtime import FatalError, RetryableError, RetryPolicy, current_step, step, workflow
from runtime.models import Event, Step


class Calls:
    """Counts body executions and the most branches running at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counts: Counter[Any] = Counter()
        self.running = 0
        self.max_running = 0

    def enter(self, key: Any) -> None:
        with self._lock:
            self.counts[key] += 1
            self.running += 1
            self.max_running = max(self.max_running, self.running)

    def leave(self) -> None:
        with self._lock:
            self.running -= 1

    def clear(self) -> None:
        with self._lock:
            self.counts.clear()
            self.running = self.max_running = 0


calls = Calls()
FAIL: set[int] = set()


@step(name="tests.fanout.square")
def square(n: int) -> int:
    calls.enter(n)
    try:
        time.sleep(0.002)
        if n in FAIL:
            raise FatalError(f"no square for {n}")
        return n * n
    finally:
        calls.leave()


@step(name="tests.fanout.flaky", retry=RetryPolicy(max_attempts=3, initial_delay=0.5, jitter=False))
def flaky(n: int) -> int:
    calls.enter(n)
    calls.leave()
    if current_step().attempt == 1:
        raise RetryableError("first attempt fails")
    return n


@workflow(name="tests.fanout.squares")
def squares(ctx: Any, n: int, **options: Any) -> Any:
    values = ctx.map(square, range(n), **options)
    return [v if isinstance(v, int) else {"failed": v.position} for v in values]


@workflow(name="tests.fanout.flakies")
def flakies(ctx: Any, n: int) -> list[int]:
    return ctx.map(flaky, range(n))


@workflow(name="tests.fanout.child")
def child(ctx: Any, n: int) -> int:
    return ctx.step(square, n) + 1


@workflow(name="tests.fanout.parent")
def parent(ctx: Any) -> list[Any]:
    return ctx.all([child.s(2), square.s(3), child.s(4)])


def completed_once(run_id: uuid.UUID) -> Counter[uuid.UUID]:
    """step_completed events per step of the run."""
    return Counter(
        Event.objects.filter(run_id=run_id, type="step_completed").values_list("step_id", flat=True)
    )


def statuses(run_id: uuid.UUID) -> Counter[str]:
    return Counter(Step.objects.filter(run_id=run_id).values_list("status", flat=True))


@step(name="tests.fanout.charge", at_most_once=True, retry=RetryPolicy(max_attempts=1))
def charge(n: int) -> int:
    calls.enter(n)
    calls.leave()
    return n


@workflow(name="tests.fanout.charges")
def charges(ctx: Any, n: int) -> Any:
    values = ctx.map(charge, range(n), return_exceptions=True)
    return [v if isinstance(v, int) else v.error_type for v in values]


RESHAPE: dict[str, Any] = {}  # what `reshaped` fans out this time: the code changing under a run


@workflow(name="tests.fanout.reshaped")
def reshaped(ctx: Any, n: int) -> Any:
    if RESHAPE.get("all"):
        return ctx.all(RESHAPE["all"])
    return ctx.map(RESHAPE.get("fn", square), range(RESHAPE.get("n", n)))
