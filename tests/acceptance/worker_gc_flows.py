"""A workflow that reports how the worker process running it collects garbage (imported by the
workers through FANFOLD_WORKFLOW_MODULES)."""

from __future__ import annotations

import gc
import os
from typing import Any

from runtime import step, workflow

MODULE = __name__


@step(name="tests.worker_gc.collector")
def collector() -> dict[str, int]:
    return {"frozen": gc.get_freeze_count(), "pid": os.getpid()}


@workflow(name="tests.worker_gc.report")
def report(ctx: Any) -> dict[str, int]:
    return ctx.step(collector)  # type: ignore[no-any-return]
