"""Fan-out group rows: reads, and the branches' dispatch times (the sweep's lost-message
clock). A group is inserted with the batch that records its branches
(runtime.store.history.history_rows)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime

from runtime.core.identity import group_id
from runtime.models import FanoutGroup, Step, StepStatus


def group_row(run_id: uuid.UUID, group_position: int) -> FanoutGroup | None:
    """The fan-out group whose first branch is at `group_position`, if it was recorded."""
    return FanoutGroup.objects.filter(run_id=run_id, id=group_id(run_id, group_position)).first()


def record_dispatch(run_id: uuid.UUID, positions: Sequence[int], at: datetime | None) -> None:
    """Pending branches' dispatch time (their wake_at): `at` after a republish, so that their
    grace starts again and no branch is published on every pass; None after a publish that
    failed, so that the next look publishes them whatever the queue holds."""
    if positions:
        Step.objects.filter(
            run_id=run_id, position__in=list(positions), status=StepStatus.PENDING
        ).update(wake_at=at)


def hand_back_claims(
    run_id: uuid.UUID, step_ids: Sequence[uuid.UUID], attempt: int, at: datetime
) -> int:
    """Undo claims of `attempt` whose bodies did not start (a chunk's window that ran out of
    time): each step is pending at the previous attempt again, dispatched `at`; a claim no
    longer held (taken over) is left alone. Returns how many were handed back."""
    if not step_ids:
        return 0
    return Step.objects.filter(
        run_id=run_id, id__in=list(step_ids), status=StepStatus.RUNNING, attempt=attempt
    ).update(status=StepStatus.PENDING, attempt=attempt - 1, wake_at=at, lease_owner=None)
