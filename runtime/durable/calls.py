"""`DurableCall`: one durable call at one position of a run, recorded the one way.

Every call that leaves a record (a value, a marker, a callback, a condition's polls, a message
or signal wait, a send) answers from the history when it holds the position, checked to be the
same call; otherwise it builds its step's row and events here: the row with the call's name,
kind and input, `step_created` first when the position is new, then the call's own event.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

from runtime.core.history import RecordedStep
from runtime.core.identity import step_id
from runtime.core.states import EventType, StepKind, StepStatus
from runtime.core.writes import EventDraft, StepRow, step_created
from runtime.durable.cursor import ReplayCursor


class DurableCall:
    """A call at `position`: what the history recorded there (checked to be this call), and
    the row and events that record it now."""

    def __init__(
        self,
        cursor: ReplayCursor,
        position: int,
        name: str,
        kind: str,
        step_input: Any = None,
        *,
        started: datetime | None = None,
    ) -> None:
        self.cursor, self.position, self.name, self.kind = cursor, position, name, kind
        self.step_input = step_input
        self.recorded: RecordedStep | None = cursor.recorded_call(position, name, kind)
        self.now = cursor.clock.now()
        began = self.recorded.started_at if self.recorded is not None else None
        self.started: datetime = started or began or self.now

    @functools.cached_property
    def sid(self) -> uuid.UUID:
        return step_id(self.cursor.run_id, self.position)  # a uuid5: derived once

    def row(self, status: str, *, attempt: int = 1, **fields: Any) -> StepRow:
        """The call's step row in `status` (`fields`: result, error, wake_at, ...)."""
        return StepRow(self.sid, self.position, self.name, self.kind, status, attempt,
                       self.started, input=self.step_input, started_at=self.started,
                       **fields)  # fmt: skip

    def event(self, kind: str, payload: dict[str, Any], at: datetime | None = None) -> EventDraft:
        return EventDraft(kind, at or self.now, self.sid, payload)

    def announced(self, at: datetime | None = None) -> EventDraft:
        """The call's `step_created` event."""
        at = at or self.now
        return step_created(self.sid, self.position, self.name, self.kind, self.step_input, at)

    def created(self) -> list[EventDraft]:
        """The `step_created` event if the history held nothing here, else nothing."""
        return [] if self.recorded is not None else [self.announced()]

    def finish(
        self,
        status: str,
        event: EventDraft,
        *,
        sync: bool = False,
        payload_bytes: int = 0,
        announced: bool = True,
        **fields: Any,
    ) -> None:
        """Record the call as finished (completed or failed) now, with its event; `announced`
        False records no `step_created` (a patch marker)."""
        row = self.row(status, finished_at=self.now, **fields)
        events = [*self.created(), event] if announced else [event]
        self.cursor.write(events, row, sync=sync, payload_bytes=payload_bytes)

    def wait(self, event: EventDraft, wake_at: datetime | None, *, sync: bool = False,
             **fields: Any) -> None:  # fmt: skip
        """Record the call as running until something (or `wake_at`) ends it, with its event."""
        row = self.row(StepStatus.RUNNING, wake_at=wake_at, **fields)
        self.cursor.write([*self.created(), event], row, sync=sync)


def record_value(cursor: ReplayCursor, name: str, produce: Callable[[], Any]) -> Any:
    """A value workflow code must see the same on replay (`ctx.now()`, `ctx.random()`, an
    emit's count): the recorded one, or `produce()` recorded as a completed step at the next
    position."""
    call = DurableCall(cursor, cursor.next_position(), name, StepKind.STEP)
    if call.recorded is not None:
        return call.recorded.result
    value = produce()
    completed = call.event(EventType.STEP_COMPLETED, {"attempt": 1, "result": value})
    # Async is enough: anything that depends on the value durably commits after it (FIFO).
    call.finish(StepStatus.COMPLETED, completed, result=value)
    return value
