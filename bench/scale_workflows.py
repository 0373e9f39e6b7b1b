"""`bench workers`'s workflow: sequential steps around a fan-out, every body a short sleep.

Not a `workflows.py`: only that benchmark loads it (its workers through
FANFOLD_WORKFLOW_MODULES). The bodies sleep so that hundreds of worker processes on a small
machine are limited by their database connections, not by the CPU.
"""

from __future__ import annotations

import time
from typing import Any

from runtime import step, workflow


@step(name="bench.scale.nap")
def nap(i: int, body_ms: float) -> int:
    time.sleep(body_ms / 1000)
    return i


@workflow(name="bench.scale.mixed")
def mixed(ctx: Any, steps: int, branches: int, body_ms: float) -> int:
    """`steps` steps, a fan-out of `branches`, `steps` more: 2 * steps + branches bodies."""
    total = sum(ctx.step(nap, i, body_ms) for i in range(steps))
    total += sum(ctx.all([nap.s(i, body_ms) for i in range(branches)]))
    return total + sum(ctx.step(nap, i, body_ms) for i in range(steps))
