"""Three 1-second schedules, one per catch-up policy (see test_flow_schedules_catchup)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from runtime import workflow

MODULE = __name__
EVERY = timedelta(seconds=1)


@workflow(name="tests.accept.catchup.skip", schedule=EVERY, catchup="skip")
def skip(ctx: Any) -> None:
    return None


@workflow(name="tests.accept.catchup.latest", schedule=EVERY, catchup="latest")
def latest(ctx: Any) -> None:
    return None


@workflow(name="tests.accept.catchup.all", schedule=EVERY, catchup="all")
def all_ticks(ctx: Any) -> None:
    return None
