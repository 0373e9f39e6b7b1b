"""`RunPart`: one run's share of a checkpoint batch, merged from one session's writes."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from runtime.core.writes import (
    ChunkDraft,
    EventDraft,
    FanoutGroupRow,
    Guard,
    HistoryWrite,
    LeaseGuard,
    RunPatch,
    StepRow,
    SuspendGuard,
)

# Written on every upsert of a step row; input and created_at are written once, at creation.
STEP_UPDATE_FIELDS = (
    "name",
    "kind",
    "status",
    "attempt",
    "result",
    "error",
    "started_at",
    "finished_at",
    "wake_at",
)


@dataclass
class RunPart:
    """What a batch writes for one run under one guard: events, step rows, a run patch, and
    stream chunks; under a SuspendGuard, the suspend's patch too, applied only if the run was
    not woken (runtime.store.runs.run_updates)."""

    run_id: uuid.UUID
    guard: Guard
    events: list[EventDraft] = field(default_factory=list)
    steps: dict[int, StepRow] = field(default_factory=dict)  # by position
    patch: RunPatch | None = None
    suspend: RunPatch | None = None
    wakes: int = 0
    cancel_open_steps: bool = False
    fanouts: list[FanoutGroupRow] = field(default_factory=list)
    chunks: list[ChunkDraft] = field(default_factory=list)
    announce: bool = False

    def suspend_lost(self, wakeups: int) -> bool:
        """Whether this part suspends its run and a wake-up raced it: the run's `wakeups`, as
        the part's UPDATE returned them, are not those the executor read."""
        guard = self.guard
        return (
            isinstance(guard, SuspendGuard)
            and self.suspend is not None
            and wakeups != guard.wakeups
        )


def run_parts(writes: Sequence[tuple[str, HistoryWrite]]) -> list[RunPart]:
    """Merge each session's writes per run and guard; different sessions never merge, so each
    keeps its own guard check (two callback posts to one token must not pass as one).

    A suspend joins the writes its session made under the same lease, so that they and the
    suspend are one statement: the lease is checked for all of them, and only the suspend's
    patch depends on the run not being woken.
    """
    parts: dict[tuple[str, uuid.UUID, Guard], RunPart] = {}
    for session, w in writes:
        guard = w.guard
        key = (
            session,
            w.run_id,
            LeaseGuard(guard.token) if isinstance(guard, SuspendGuard) else guard,
        )
        part = parts.get(key)
        if part is None:
            part = parts[key] = RunPart(w.run_id, guard)
        part.events.extend(w.events)
        for row in w.steps:
            # The latest state wins and keeps FIFO placement. By position, as the table's
            # upsert is (a step's id is derived from its run and position).
            part.steps.pop(row.position, None)
            part.steps[row.position] = row
        if isinstance(guard, SuspendGuard):
            part.guard = guard
            if w.run is not None:
                part.suspend = w.run if part.suspend is None else part.suspend.merged(w.run)
        elif w.run is not None:
            part.patch = w.run if part.patch is None else part.patch.merged(w.run)
        part.wakes += int(w.wake)
        part.cancel_open_steps = part.cancel_open_steps or w.cancel_open_steps
        part.fanouts.extend(w.fanouts)
        part.chunks.extend(w.chunks)
        part.announce = part.announce or w.announce
    return list(parts.values())
