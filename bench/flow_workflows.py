"""The flow-control benchmark's workflows (`bench flow`): one loop, limits off and on.

The limits are set so high that nothing ever waits: what `bench flow` measures is the cost of
admission and of taking rate-limit turns, not the limits themselves. Not a `workflows.py`:
only `bench flow` loads it (its workers through FANFOLD_WORKFLOW_MODULES), so that the other
scenarios measure workers as they were.
"""

from __future__ import annotations

from typing import Any

from runtime import step, workflow

BIG = 1_000_000


@step(name="bench.flow.noop")
def noop(i: int) -> int:
    return i


@step(name="bench.flow.paced_noop", rate_limit=f"{BIG}/s")
def paced_noop(i: int) -> int:
    return i


@workflow(name="bench.flow.plain")
def plain(ctx: Any, steps: int) -> int:
    """No limits: the baseline."""
    for i in range(steps):
        ctx.step(noop, i)
    return steps


@workflow(name="bench.flow.admitted", concurrency=BIG)
def admitted(ctx: Any, steps: int) -> int:
    """The same loop under a concurrency limit it never reaches: admission on every run."""
    for i in range(steps):
        ctx.step(noop, i)
    return steps


@workflow(name="bench.flow.paced")
def paced(ctx: Any, steps: int) -> int:
    """The same loop with a rate-limited step: a turn taken before every body."""
    for i in range(steps):
        ctx.step(paced_noop, i)
    return steps


@workflow(name="bench.flow.fanned")
def fanned(ctx: Any, steps: int) -> int:
    """A fan-out of steps without limits, in a worker where a rate-limited step is registered:
    its branches must not pay for that."""
    return len(ctx.map(noop, range(steps)))


@workflow(name="bench.flow.paced_fan")
def paced_fan(ctx: Any, steps: int) -> int:
    """The same fan-out of a rate-limited step: each branch takes a turn after its claim."""
    return len(ctx.map(paced_noop, range(steps)))
