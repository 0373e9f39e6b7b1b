"""Django tasks and a workflow over them for the Tasks backend's acceptance tests.

Imported by the test process and by the worker processes (the tasks by their path, the
workflow through FANFOLD_WORKFLOW_MODULES). Bodies record each execution in Redis.
"""

from __future__ import annotations

from typing import Any

from runtime import RetryPolicy, workflow
from runtime.django_tasks.compat import TaskContext, task
from runtime.django_tasks.steps import step_of
from tests.support.services import counters_redis_client

MODULE = __name__
RUNS = "tests:tasks:runs"  # one entry (the attempt) per execution of `hold_then_finish`
RELEASE = "tests:tasks:release"  # never pushed: attempt 1 blocks until its worker is killed
SQUARES = "tests:tasks:squares"  # one entry per execution of `square`
BATCH = "tests:tasks:batch"  # one entry ("label:attempt") per execution of `batch_item`


@task(takes_context=True, retry=RetryPolicy(max_attempts=3, initial_delay=0.2, jitter=False))
def hold_then_finish(context: TaskContext, label: str) -> dict[str, Any]:
    attempt = context.attempt
    counters_redis_client().rpush(RUNS, attempt)
    if attempt == 1:
        counters_redis_client().blpop([RELEASE], timeout=120)
    return {"label": label, "attempt": attempt}


@task(takes_context=True, retry=RetryPolicy(max_attempts=3, initial_delay=0.2, jitter=False))
def batch_item(context: TaskContext, label: str, hold: bool) -> str:
    """One task of a batch; the one to `hold` blocks in its first attempt until its worker
    process is killed."""
    counters_redis_client().rpush(BATCH, f"{label}:{context.attempt}")
    if hold and context.attempt == 1:
        counters_redis_client().blpop([RELEASE], timeout=120)
    return label


@task
def square(x: int) -> int:
    counters_redis_client().rpush(SQUARES, x)
    return x * x


square_step = step_of(square)


@workflow(name="tests.tasks.sum_of_squares")
def sum_of_squares(ctx: Any, numbers: list[int]) -> int:
    first = ctx.step(square_step, numbers[0])
    return first + sum(ctx.map(square_step, numbers[1:]))


@task
@workflow(name="tests.tasks.squares_total")
def squares_total(ctx: Any, numbers: list[int]) -> int:
    """A task that is a workflow: enqueued, its run fans out over `square` on the workers."""
    return sum(ctx.map(square_step, numbers))
