"""`ReplayCursor`: a run's recorded history as workflow code walks through it.

Each durable call of a workflow takes the next position from the cursor. If the history holds
that position the call answers from the record; otherwise it runs and records what happened
through the cursor, which checkpoints it and keeps the in-memory history in step. The context
(runtime.context), callbacks and fan-outs all go through this one public surface.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from typing import Any

from runtime.core.clock import Clock
from runtime.core.errors import NonDeterminismError
from runtime.core.history import RecordedStep, StepAction, check_identity
from runtime.core.jsonvalues import checked
from runtime.core.states import StepKind, StepStatus
from runtime.core.writes import ChunkDraft, EventDraft, HistoryWrite, StepRow
from runtime.durable.session import ExecutionSession

# A record in one of these states never changes again (a fork is a run of its own).
_FINISHED = frozenset((StepStatus.COMPLETED, StepStatus.FAILED, StepStatus.CANCELLED))


class ReplayCursor:
    """Positions, recorded steps and the writes of one execution of one run."""

    def __init__(
        self,
        session: ExecutionSession,
        recorded: dict[int, RecordedStep],
        clock: Clock,
        payload_limit: int,
    ) -> None:
        self.session = session
        self.clock = clock
        self._recorded = recorded
        self._last_recorded = self._last_held = max(recorded, default=0)
        # The records that may still change, kept as they change: a long-lived run's resume
        # looks at these, not at its whole history.
        self._open = {p: r for p, r in recorded.items() if r.status not in _FINISHED}
        self._position = 0
        self._limit = payload_limit
        self.fatal: BaseException | None = None  # set when user code swallowed a fatal error

    @property
    def run_id(self) -> uuid.UUID:
        return self.session.run_id

    @property
    def payload_limit(self) -> int:
        """The largest payload, in bytes of JSON, that a step may record."""
        return self._limit

    @property
    def priority(self) -> int:
        """The run's priority (0-9): the branches it publishes carry it."""
        return self.session.priority

    @property
    def is_replaying(self) -> bool:
        """True while the workflow re-executes positions the history already holds."""
        return self._position < self._last_recorded

    @property
    def went_past_history(self) -> bool:
        """True once the workflow took a position its loaded history did not hold: this
        execution recorded something new."""
        return self._position > self._last_recorded

    @property
    def position(self) -> int:
        """The position the workflow took last (0 before its first durable call)."""
        return self._position

    def open_steps(self) -> list[RecordedStep]:
        """The steps the history holds that have not finished (pending, running), by position."""
        return [self._open[p] for p in sorted(self._open)]

    def next_position(self) -> int:
        """Take the next position; raises the fatal error if user code swallowed one.

        Patch markers the code does not ask for are stepped over: a `ctx.patched` call that
        was removed once no open run lacked its marker leaves markers behind in histories.
        """
        if self.fatal is not None:
            # The history no longer matches, so no later durable call may run a body, record
            # anything or suspend the run.
            raise self.fatal
        self._position += 1
        while (
            record := self._recorded.get(self._position)
        ) is not None and record.kind == StepKind.MARKER:
            self._position += 1
        return self._position

    def patch_answer(self, patch_id: str) -> bool | None:
        """What the history says about `ctx.patched(patch_id)` here; None at its frontier.

        The recorded answer of this patch's marker among the markers at the next positions;
        False when the history goes on without it (the run passed here on older code).
        """
        if self.fatal is not None:
            raise self.fatal
        position = self._position + 1
        while (
            record := self._recorded.get(position)
        ) is not None and record.kind == StepKind.MARKER:
            if record.name == patch_id:
                return bool(record.result)
            position += 1
        return None if record is None else False

    def before_dispatch(self) -> None:
        """Called before a fan-out acts outside the history (publishes or takes over
        branches); a cursor that only checks the history (runtime.replay_check) stops here."""

    def rewind(self, position: int) -> None:
        """Go back to `position` to make the call after it again (a parked wait's resume,
        runtime.durable.parking): as a replay, over the history as it is now."""
        self._position = position

    def resume_pass(
        self, session: ExecutionSession, clock: Clock, news: list[RecordedStep]
    ) -> None:
        """Carry this cursor into a new pass of a parked workflow: the pass's session and clock,
        and the records `news` read since (runtime.warm)."""
        self.session, self.clock = session, clock
        for record in news:
            self.remember(record)
        self._last_recorded = self._last_held

    def first_open_position(self) -> int:
        """The first position whose record may still change (not finished), or the one after
        the last record: what a warm resume reads the history from (runtime.warm)."""
        return min(self._open, default=self._last_recorded + 1)

    def recorded(self, position: int) -> RecordedStep | None:
        return self._recorded.get(position)

    def remember(self, record: RecordedStep) -> None:
        """Replace what the history holds at `record.position` (after a write or a reload)."""
        position = record.position
        self._recorded[position] = record
        self._last_held = max(self._last_held, position)
        if record.status in _FINISHED:
            self._open.pop(position, None)
        else:
            self._open[position] = record

    def fail(self, exc: BaseException) -> None:
        """Make `exc` sticky: user code catching it must not hide it."""
        self.fatal = exc

    def recorded_call(self, position: int, name: str, kind: str) -> RecordedStep | None:
        """The record at `position`, checked to be of this call's name and kind (else a sticky
        NonDeterminismError); None where the history holds nothing yet."""
        recorded = self._recorded.get(position)
        if recorded is not None:
            try:
                check_identity(recorded, name, kind)
            except NonDeterminismError as exc:
                self.fail(exc)
                raise
        return recorded

    def identity_checked(self, decide_action: Callable[[], StepAction]) -> StepAction:
        """Run a replay decision; a NonDeterminismError it raises becomes sticky."""
        try:
            return decide_action()
        except NonDeterminismError as exc:
            self.fail(exc)
            raise

    def checked(self, value: Any, what: str) -> tuple[Any, int]:
        """`value` checked as a JSON value within the payload limit, and its size."""
        return checked(value, what, self._limit)

    def write(
        self,
        events: Iterable[EventDraft],
        row: StepRow,
        *,
        sync: bool,
        payload_bytes: int = 0,
        chunks: Iterable[ChunkDraft] = (),
    ) -> None:
        """Checkpoint one step's new state with its events (and the stream chunks its body
        left to commit with it), and remember it."""
        write = HistoryWrite(
            self.run_id, self.session.guard, tuple(events), (row,), chunks=tuple(chunks)
        )
        self.checkpoint(write, sync=sync, payload_bytes=payload_bytes)
        self.remember(RecordedStep.of(row))

    def checkpoint(self, write: HistoryWrite, *, sync: bool, payload_bytes: int = 0) -> None:
        """Checkpoint a write of this execution as it is (a fan-out's start, a barrier)."""
        self.session.checkpoint(write, sync=sync, payload_bytes=payload_bytes)
