"""The workflow `bench testkit` times under the test kit: a month of daily sleeps, a step that
fails five times an hour apart, and a callback that times out after a week."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from runtime import CallbackTimedOut, RetryPolicy, current_step, step, workflow

DAYS = 30
FAILURES = 5
HOURLY = RetryPolicy(
    max_attempts=FAILURES + 1, initial_delay=3600, max_delay=3600, backoff=1.0, jitter=False
)
CALLBACK_TIMEOUT = timedelta(days=7)


@step(name="bench.testkit.flaky", retry=HOURLY)
def flaky() -> int:
    attempt = current_step().attempt
    if attempt <= FAILURES:
        raise ConnectionError(f"attempt {attempt} fails")
    return attempt


@workflow(name="bench.testkit.month")
def month(ctx: Any) -> dict[str, Any]:
    began = ctx.now()
    for _ in range(DAYS):
        ctx.sleep(timedelta(days=1))
    attempts = ctx.step(flaky)
    try:
        ctx.create_callback("confirmation", timeout=CALLBACK_TIMEOUT).wait()
        timed_out = False
    except CallbackTimedOut:
        timed_out = True
    return {
        "attempts": attempts,
        "timed_out": timed_out,
        "virtual_seconds": (ctx.now() - began).total_seconds(),
    }
