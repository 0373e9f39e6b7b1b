"""Django tasks the Tasks backend tests enqueue (module level, as Django requires), from
this process and from real workers alike."""

from __future__ import annotations

from typing import Any

from runtime import FatalError, RetryPolicy, workflow
from runtime.django_tasks.compat import TaskContext, task

_task = task


@_task()
def add(a: int, b: int) -> int:
    return a + b


@_task(priority=50, queue_name="default")
def echo(value: Any) -> Any:
    return value


@_task(retry=RetryPolicy(max_attempts=3, initial_delay=0.05, jitter=False))
def flaky(fail_times: int, context_attempts: list[int] | None = None) -> int:
    from runtime import current_step

    attempt = current_step().attempt
    if attempt <= fail_times:
        raise ValueError(f"attempt {attempt} fails")
    return attempt


@_task(takes_context=True, retry=RetryPolicy(max_attempts=2, initial_delay=0.05, jitter=False))
def attempt_number(context: TaskContext, fail_first: bool) -> int:
    if fail_first and context.attempt == 1:
        raise RuntimeError("first attempt fails")
    return int(context.attempt)


@_task()
async def async_double(x: int) -> int:
    return x * 2


@_task(retry=RetryPolicy(max_attempts=1))
def always_fails() -> None:
    raise KeyError("missing")


@_task()
def fails_once() -> int:
    """No policy of its own: the backend's OPTIONS["retry"] (or Fanfold's default) applies."""
    from runtime import current_step

    attempt = current_step().attempt
    if attempt == 1:
        raise ConnectionError("first attempt fails")
    return attempt


def subtotal(prices: list[int]) -> int:
    return sum(prices)


@_task(priority=20)
@workflow(name="tests.tasks.order_total")
def order_total(ctx: Any, prices: list[int], discount: int = 0) -> int:
    """A task that is itself a Fanfold workflow: enqueued, it is a run of this workflow."""
    return int(ctx.step(subtotal, prices)) - discount


@_task()
@workflow(name="tests.tasks.refuses")
def refuses(ctx: Any, reason: str) -> None:
    raise FatalError(reason)


@_task()
def triple(x: int) -> int:
    """One argument: a workflow may `ctx.map` it (tests/integration/tasks_backend)."""
    return x * 3


@_task()
@workflow(name="tests.tasks.invoice", search={"customer": int})
def invoice(ctx: Any, customer: int) -> int:
    """A workflow task with a search attribute: `invoice.using(search={"customer": 7})`."""
    return customer
