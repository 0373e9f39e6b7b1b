"""What a fan-out took, read back from its rows: for the benchmark and for operators.

Times are measured from the run's creation: the first branch body's start (`ttfs`), the last
branch body's end (`ttls`) and the workflow finishing with every result (`fan_in`).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.db.models import Max, Min

from runtime.models import FanoutGroup, Run, Step


@dataclass(frozen=True)
class FanoutTimings:
    branches: int
    ttfs_ms: float | None  # run created -> first branch body started
    ttls_ms: float | None  # run created -> last branch body finished
    fan_in_ms: float | None  # run created -> run finished (resumed with every result)


def fanout_timings(run_id: uuid.UUID) -> FanoutTimings:
    """Timings of the fan-outs of `run_id` (all its groups' branches together)."""
    run = Run.objects.get(id=run_id)
    groups = list(FanoutGroup.objects.filter(run_id=run_id).values_list("first_position", "total"))
    positions = [p for first, total in groups for p in range(first, first + total)]
    span = Step.objects.filter(run_id=run_id, position__in=positions).aggregate(
        first=Min("started_at"), last=Max("finished_at")
    )

    def since_created(moment: object) -> float | None:
        if moment is None:
            return None
        return (moment - run.created_at).total_seconds() * 1000  # type: ignore[operator]

    return FanoutTimings(
        branches=len(positions),
        ttfs_ms=since_created(span["first"]),
        ttls_ms=since_created(span["last"]),
        fan_in_ms=since_created(run.finished_at),
    )
