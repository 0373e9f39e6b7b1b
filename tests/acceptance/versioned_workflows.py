"""A workflow whose code changes between deploys, for the `ctx.patched` acceptance test.

`OPERATE_CODE_VERSION` in a worker's environment says which code it runs (1 before the
change, 2 after it), the way two deploys of a project would. Imported by the test process and,
through FANFOLD_WORKFLOW_MODULES, by the workers. Each body execution is pushed to a Redis list
on the broker database so the test can count them across worker processes.
"""

from __future__ import annotations

import os
from typing import Any

from runtime import step, workflow
from tests.support.services import broker_redis

MODULE = __name__
BODIES = "tests:versioned:bodies"
VERSION_ENV = "OPERATE_CODE_VERSION"


def code_version() -> int:
    return int(os.environ.get(VERSION_ENV, "1"))


@step(name="tests.versioned.mark")
def mark(label: str, part: str) -> str:
    broker_redis().rpush(BODIES, f"{label}:{part}")
    return part


@workflow(name="tests.versioned.order")
def order(ctx: Any, label: str) -> list[Any]:
    """v1: a, b, wait for "go", d. v2 charges with c instead of b, behind a patch."""
    out = [ctx.step(mark, label, "a", name="a")]
    if code_version() >= 2 and ctx.patched("charge-v2"):
        out.append(ctx.step(mark, label, "c", name="c"))
    else:
        out.append(ctx.step(mark, label, "b", name="b"))
    out.append(ctx.create_callback("go").wait())
    out.append(ctx.step(mark, label, "d", name="d"))
    return out
