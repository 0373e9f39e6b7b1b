"""What one checkpoint asks the store to write: events to append, step rows, a run patch.

These frozen records are the seam between the context (which decides) and the database sink
(which writes). Steps are written as whole-row upserts keyed by their derived id, so a step's
start and its completion queued in the same batch collapse into one insert.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from runtime.core.branches import BranchClaim, BranchReport
from runtime.core.states import EventType

UNSET: Any = object()  # a RunPatch field that is not to change


@dataclass(frozen=True, slots=True)
class EventDraft:
    type: str
    at: datetime
    step_id: uuid.UUID | None = None
    payload: dict[str, Any] = field(default_factory=dict)


def step_created(
    sid: uuid.UUID,
    position: int,
    name: str,
    kind: str,
    step_input: Any,
    at: datetime,
    **extra: Any,
) -> EventDraft:
    """The `step_created` event of a new step (`extra`: e.g. the fan-out it belongs to)."""
    payload = {"position": position, "name": name, "kind": kind, "input": step_input, **extra}
    return EventDraft(EventType.STEP_CREATED, at, sid, payload)


@dataclass(frozen=True, slots=True)
class ChunkDraft:
    """A chunk of the run's stream `stream`, appended in the checkpoint's transaction: the
    output of a step that appears when, and only if, the step's outcome commits."""

    stream: str
    value: Any


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
    callback_token: str | None = None  # written once, when a callback step is created


@dataclass(frozen=True, slots=True)
class RunPatch:
    """Run columns to set; UNSET leaves a column as it is."""

    status: Any = UNSET
    result: Any = UNSET
    error: Any = UNSET
    started_at: Any = UNSET
    finished_at: Any = UNSET
    wake_at: Any = UNSET
    warm_queue: Any = UNSET  # a suspend's: where its resumes go first (runtime.warm.routing)
    release_lease: bool = False

    def merged(self, later: RunPatch) -> RunPatch:
        """This patch followed by `later`: later values win."""
        values = {
            name: getattr(later, name) if getattr(later, name) is not UNSET else getattr(self, name)
            for name in _PATCHED
        }
        return RunPatch(**values, release_lease=self.release_lease or later.release_lease)

    def columns(self) -> dict[str, Any]:
        cols = {name: getattr(self, name) for name in _PATCHED if getattr(self, name) is not UNSET}
        return cols


_PATCHED = ("status", "result", "error", "started_at", "finished_at", "wake_at", "warm_queue")


@dataclass(frozen=True, slots=True)
class LeaseGuard:
    """Write only while this executor still owns the run (a fencing token)."""

    token: str


@dataclass(frozen=True, slots=True)
class UnfinishedGuard:
    """Write only while the run has not finished (cancel, callbacks, fan-in)."""


@dataclass(frozen=True, slots=True)
class SuspendGuard:
    """Write only while this executor owns the run, and suspend it (the write's run patch) only
    if nobody woke it since it read `wakeups`; else the write's receipt is `Woken`."""

    token: str
    wakeups: int


@dataclass(frozen=True, slots=True)
class Woken:
    """The receipt of a suspend that a wake-up raced: its writes committed, the run was not
    suspended, and it has been woken `wakeups` times."""

    wakeups: int


@dataclass(frozen=True, slots=True)
class OpenStepGuard:
    """Write only while the step is still pending or running (callback results and timeouts).

    With `token` the lease must be ours (an executor); without it the run must be unfinished
    (a callback post). With `due_by` the step's deadline must not lie after it, so a timeout
    cannot overwrite a heartbeat that extended the deadline meanwhile.
    """

    step_id: uuid.UUID
    token: str | None = None
    due_by: datetime | None = None


Guard = LeaseGuard | UnfinishedGuard | SuspendGuard | OpenStepGuard


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
    fanouts: tuple[FanoutGroupRow, ...] = ()  # fan-out groups created with these steps
    chunks: tuple[ChunkDraft, ...] = ()  # stream chunks committed with this write
    announce: bool = False  # notify the run's listeners (other processes) when it commits

    def sort_into(self, batch: WriteSorter, session: str, size: int) -> None:
        batch.history(self, session, size)


@dataclass(frozen=True, slots=True)
class FanoutGroupRow:
    """A new fan-out group: its branches are the steps at first_position .. + total - 1."""

    id: uuid.UUID
    first_position: int
    total: int
    released: int
    need: int | None
    failure_limit: int
    created_at: datetime


class WriteSorter(Protocol):
    """What a batch's writes are sorted into by kind (runtime.store.history.batch): each write adds
    itself with `sort_into`, so the store never asks a write for its type."""

    def history(self, write: HistoryWrite, session: str, size: int) -> None: ...

    def claim(self, claim: BranchClaim) -> None: ...

    def report(self, report: BranchReport) -> None: ...


Write = HistoryWrite | BranchClaim | BranchReport
