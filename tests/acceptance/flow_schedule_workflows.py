"""Scheduled workflows for the schedule acceptance tests: 1-second intervals.

Each module is loaded only by the workers of its test (FANFOLD_WORKFLOW_MODULES), so other
tests' workers never tick these schedules.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from runtime import step, workflow
from tests.support.services import counters_redis_client

MODULE = __name__
BODIES = "tests:flow:ticks"  # one run id per body of `record`


@step(name="tests.accept.schedule.record")
def record(run_id: str) -> str:
    counters_redis_client().rpush(BODIES, run_id)
    return run_id


@workflow(name="tests.accept.schedule.every_second", schedule=timedelta(seconds=1))
def every_second(ctx: Any) -> str:
    return ctx.step(record, str(ctx.run_id))
