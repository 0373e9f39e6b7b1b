"""Workflows of the stream acceptance tests; workers import them through
FANFOLD_WORKFLOW_MODULES=tests.acceptance.stream_flows."""

from __future__ import annotations

import time
from typing import Any

from runtime import RetryPolicy, step, stream, workflow

MODULE = "tests.acceptance.stream_flows"


@step(name="tests.streams.emit")
def emit(count: int, pause_every: int) -> int:
    for i in range(count):
        stream().write({"i": i, "t": time.time()})
        if pause_every and i % pause_every == pause_every - 1:
            time.sleep(0.05)  # readers are mid-stream, not handed one finished batch
    return count


@workflow(name="tests.streams.chunks")
def chunks(ctx: Any, count: int, pause_every: int = 0) -> int:
    return int(ctx.step(emit, count, pause_every))


@step(
    name="tests.streams.flaky", retry=RetryPolicy(max_attempts=2, initial_delay=0.1, jitter=False)
)
def flaky(marker: str) -> str:
    from runtime import current_step

    attempt = current_step().attempt
    stream("attempts").write(f"{marker} attempt {attempt}")
    if attempt == 1:
        raise RuntimeError("the first attempt fails after writing")
    return "ok"


@workflow(name="tests.streams.progress")
def progress(ctx: Any) -> str:
    # Written from workflow code: replays after the sleep and the retry must not write again.
    stream("progress").write("begun")
    ctx.sleep(0.3)
    stream("progress").write("slept")
    result = ctx.step(flaky, "flaky")
    stream("progress").write("done")
    return str(result)
