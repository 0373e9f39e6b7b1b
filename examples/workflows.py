"""Example workflows: what `manage.py demo` runs and what the benchmarks measure."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from runtime import (
    CallbackTimedOut,
    RetryableError,
    RetryPolicy,
    current_step,
    step,
    stream,
    workflow,
)


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


# -- streams, polling and child workflows (docs/streams.md, docs/waiting.md) ---------------


@step(name="examples.count_words")
def count_words(text: str) -> int:
    """Counts words, streaming its progress to whoever reads the run's "progress" stream."""
    words = text.split()
    for done, word in enumerate(words, 1):
        stream("progress").write({"word": word, "done": done, "of": len(words)})
    return len(words)


@workflow(name="examples.word_count")
def word_count(ctx: Any, text: str) -> int:
    """A step that streams progress; the workflow itself writes the first and last chunk."""
    stream("progress").write("started")
    words = ctx.step(count_words, text)
    stream("progress").write("finished")
    return words


@step(name="examples.stream_ticks")
def stream_ticks(count: int, pause: float = 0.0) -> int:
    """Writes `count` chunks stamped with the time of writing (the stream benchmark)."""
    for i in range(count):
        stream().write({"i": i, "written_at": time.time()})
        if pause:
            time.sleep(pause)
    return count


@workflow(name="examples.ticks")
def ticks(ctx: Any, count: int, pause: float = 0.0) -> int:
    return int(ctx.step(stream_ticks, count, pause))


@step(name="examples.ready_yet")
def ready_yet(since: str, seconds: float) -> dict[str, float] | None:
    """None until `seconds` have passed since `since`: a stand-in for "is the export done?"."""
    waited = (datetime.now(UTC) - datetime.fromisoformat(since)).total_seconds()
    return {"waited": round(waited, 1)} if waited >= seconds else None


@workflow(name="examples.wait_until_ready")
def wait_until_ready(ctx: Any, seconds: float = 0.5) -> dict[str, float]:
    """Polls `ready_yet` every 0.1 s (durably: one step record, no worker held between)."""
    since = ctx.now().isoformat()
    return ctx.wait_for_condition(ready_yet, since, seconds, interval=0.1, timeout=60)


@workflow(name="examples.square_later")
def square_later(ctx: Any, n: int) -> int:
    """A child workflow: it sleeps, then squares."""
    ctx.sleep(0.1)
    return ctx.step(square, n)


@workflow(name="examples.map_children")
def map_children(ctx: Any, count: int = 4) -> list[int]:
    """`ctx.map` over a workflow: one child run per item, at most two at a time."""
    return ctx.map(square_later, range(1, count + 1), max_concurrency=2)


@workflow(name="examples.approve_while_sleeping")
def approve_while_sleeping(ctx: Any, timeout: float = 0.5, sleep: float = 1.0) -> dict[str, Any]:
    """A callback that times out while the run sleeps: recorded at its deadline, not after."""
    approval = ctx.create_callback("approval", timeout=timeout)
    ctx.sleep(sleep)
    try:
        return {"approved": approval.wait()}
    except CallbackTimedOut:
        return {"approved": None, "timed_out": True}
