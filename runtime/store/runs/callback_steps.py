"""What the workflow side reads of its callback steps beyond the replayed history: their
inputs (the callback's terms) and a step as it is now after a refused write."""

from __future__ import annotations

import uuid
from typing import Any

from runtime.core.history import RecordedStep
from runtime.models import Step


def step_inputs(run_id: uuid.UUID, positions: list[int]) -> dict[int, Any]:
    """The stored input of each of the run's steps at these positions, by position."""
    rows = Step.objects.filter(run_id=run_id, position__in=positions)
    return dict(rows.values_list("position", "input"))


def recorded_step(run_id: uuid.UUID, position: int) -> RecordedStep:
    """The run's step at `position` as recorded now (Step.DoesNotExist if none)."""
    return RecordedStep.of(Step.objects.get(run_id=run_id, position=position).as_row())
