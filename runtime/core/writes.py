"""What one checkpoint asks the store to write: events to append, step rows, a run patch.

These frozen records are the seam between the context (which decides) and the database sink
(which writes). Steps are written as whole-row upserts keyed by their derived id, so a step's
start and its completion queued in the same batch collapse into one insert.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

UNSET: Any = object()  # a RunPatch field that is not to change


@dataclass(frozen=True, slots=True)
class EventDraft:
    type: str
    at: datetime
    step_id: uuid.UUID | None = None
    payload: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class StepRow:
    id: uuid.UUID
    position: int
    name: str
    kind: str
    status: str
    attempt: int
    created_at: datetime
    input: Any = None
    result: Any = None
    error: dict[str, Any] | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    wake_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class RunPatch:
    """Run columns to set; UNSET leaves a column as it is."""

    status: Any = UNSET
    result: Any = UNSET
    error: Any = UNSET
    started_at: Any = UNSET
    finished_at: Any = UNSET
    wake_at: Any = UNSET
    release_lease: bool = False

    def merged(self, later: RunPatch) -> RunPatch:
        """This patch followed by `later`: later values win."""
        values = {
            name: getattr(later, name) if getattr(later, name) is not UNSET else getattr(self, name)
            for name in ("status", "result", "error", "started_at", "finished_at", "wake_at")
        }
        return RunPatch(**values, release_lease=self.release_lease or later.release_lease)

    def columns(self) -> dict[str, Any]:
        cols = {
            name: getattr(self, name)
            for name in ("status", "result", "error", "started_at", "finished_at", "wake_at")
            if getattr(self, name) is not UNSET
        }
        return cols


@dataclass(frozen=True, slots=True)
class LeaseGuard:
    """Write only while this executor still owns the run (a fencing token)."""

    token: str


@dataclass(frozen=True, slots=True)
class UnfinishedGuard:
    """Write only while the run has not finished (cancel, callbacks, fan-in)."""


@dataclass(frozen=True, slots=True)
class SuspendGuard:
    """Suspend only if the lease is still ours and nobody woke the run since we looked."""

    token: str
    wakeups: int


Guard = LeaseGuard | UnfinishedGuard | SuspendGuard


@dataclass(frozen=True, slots=True)
class HistoryWrite:
    """One checkpoint's payload for one run."""

    run_id: uuid.UUID
    guard: Guard
    events: tuple[EventDraft, ...] = ()
    steps: tuple[StepRow, ...] = ()
    run: RunPatch | None = None
    wake: bool = False  # bump Run.wakeups: the run has something new to react to
    cancel_open_steps: bool = False  # mark every pending or running step cancelled
