"""What a child-workflow branch reads of its parent and of the children it started."""

from __future__ import annotations

import uuid
from typing import Any

from runtime.models import Run, Step


def run_owner(run_id: uuid.UUID) -> Any:
    """The owner's id of the run (None for none, or an unknown run)."""
    return Run.objects.filter(id=run_id).values_list("owner_id", flat=True).first()


def run_has_finished(run_id: uuid.UUID) -> bool:
    """Whether the run exists and has finished."""
    return Run.objects.finished().filter(id=run_id).exists()


def step_status(run_id: uuid.UUID, step_id: uuid.UUID) -> str | None:
    """The run's step's status, or None if there is no such step."""
    steps = Step.objects.filter(run_id=run_id, id=step_id)
    status: str | None = steps.values_list("status", flat=True).first()
    return status


def active_runs_with_key(owner_id: Any, idempotency_key: str) -> list[uuid.UUID]:
    """The ids of the owner's active runs started with this idempotency key."""
    active = Run.objects.active().filter(owner_id=owner_id, idempotency_key=idempotency_key)
    return list(active.values_list("id", flat=True))
