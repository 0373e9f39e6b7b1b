"""Example workflows: what `manage.py demo` runs and what the benchmarks measure."""

from __future__ import annotations

from typing import Any

from runtime import RetryableError, RetryPolicy, current_step, step, workflow


@step(name="examples.add")
def add(total: int, n: int) -> int:
    return total + n


@workflow(name="examples.sequential_sum")
def sequential_sum(ctx: Any, count: int) -> int:
    """Adds 1..count one durable step at a time."""
    total = 0
    for n in range(1, count + 1):
        total = ctx.step(add, total, n)
    return total


@step(
    name="examples.flaky_fetch",
    retry=RetryPolicy(max_attempts=5, initial_delay=0.2, backoff=2.0, jitter=False),
)
def flaky_fetch(item: str, failures: int) -> dict[str, Any]:
    """Fails its first `failures` attempts, then succeeds: a stand-in for a shaky API."""
    attempt = current_step().attempt
    if attempt <= failures:
        raise RetryableError(f"upstream busy (attempt {attempt})")
    return {"item": item, "attempts": attempt}


@workflow(name="examples.flaky")
def flaky(ctx: Any, item: str = "sku-1", failures: int = 2) -> dict[str, Any]:
    """One step that fails twice and then succeeds, retried by its RetryPolicy."""
    return ctx.step(flaky_fetch, item, failures)


@step(name="examples.stamp")
def stamp(label: str) -> str:
    return label


@workflow(name="examples.nap")
def nap(ctx: Any, seconds: float = 1.0) -> dict[str, Any]:
    """A durable sleep between two steps: no worker is held while it sleeps."""
    before = ctx.step(stamp, "before")
    ctx.sleep(seconds)
    after = ctx.step(stamp, "after")
    return {"before": before, "after": after, "slept": seconds}


@step(name="examples.noop")
def noop(i: int) -> int:
    return i


@workflow(name="examples.noop_loop")
def noop_loop(ctx: Any, steps: int) -> int:
    """`steps` sequential no-op steps: the benchmark's sequential loop."""
    for i in range(steps):
        ctx.step(noop, i)
    return steps


@step(name="examples.noop_branch")
def noop_branch(i: int) -> int:
    """Does nothing: the fan-out benchmark measures the runtime around it (Step timestamps)."""
    return i


@workflow(name="examples.fanout_noop")
def fanout_noop(ctx: Any, n: int, max_concurrency: int | None = None) -> int:
    """`ctx.map` over `n` no-op branches; returns how many came back."""
    return len(ctx.map(noop_branch, range(n), max_concurrency=max_concurrency))


@step(name="examples.square")
def square(n: int) -> int:
    return n * n


@workflow(name="examples.sum_of_squares")
def sum_of_squares(ctx: Any, count: int = 20) -> int:
    """A fan-out: `count` branches on any worker, results back in order, then one more step."""
    squares = ctx.map(square, range(1, count + 1), max_concurrency=8)
    return ctx.step(add, 0, sum(squares))
