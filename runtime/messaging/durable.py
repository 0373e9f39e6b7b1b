"""The workflow side of messages, values and signals: each call at a position of the history.

`ctx.recv` and `ctx.wait_for_signal` record a step (kind "message" / "signal") that waits with
no worker held: the run suspends until a delivery wakes it or the timeout passes, and the
received message or signal is recorded (`message_received`, `signal_received`) so a replay
returns the same one. `ctx.set_value` and a `send` from workflow code record a completed step
after their effect, which is keyed by the position, so a replay neither repeats nor regresses it.
"""

from __future__ import annotations

import contextvars
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any, Protocol

from runtime.core import history
from runtime.core.control import Suspend
from runtime.core.errors import RunFinished, RunNotFound, StepFailed
from runtime.core.identity import step_id
from runtime.core.matching import check_match
from runtime.core.states import EventType, StepStatus
from runtime.core.writes import EventDraft, StepRow, step_created
from runtime.durable.cursor import ReplayCursor
from runtime.durable.steps import record_value
from runtime.messaging.mailbox import check_topic, send_message
from runtime.messaging.signals import check_signal_name, emit
from runtime.messaging.values import check_key, store_value
from runtime.models import StepKind
from runtime.store.messages import take_message
from runtime.store.signals import close_wait_timed_out, emitter_of, open_wait, wait_at

MESSAGE, SIGNAL, VALUE, SEND = StepKind.MESSAGE, StepKind.SIGNAL, StepKind.VALUE, StepKind.SEND


class WorkflowSender(Protocol):
    """What `runtime.send` needs of the workflow whose code calls it."""

    def send_durably(
        self, run_id: uuid.UUID | str, topic: str, value: Any, idempotency_key: str | None
    ) -> int: ...

    def emit_durably(self, name: str, payload: Any, idempotency_key: str | None) -> int: ...


_current: contextvars.ContextVar[WorkflowSender | None] = contextvars.ContextVar(
    "fanfold_workflow_sender", default=None
)


@contextmanager
def workflow_sender(ctx: WorkflowSender) -> Iterator[None]:
    """Mark the code running in this context as the workflow code of `ctx` (runtime.context)."""
    token = _current.set(ctx)
    try:
        yield
    finally:
        _current.reset(token)


def current_sender() -> WorkflowSender | None:
    """The workflow whose code is running here, if any."""
    return _current.get()


def _answer(
    cursor: ReplayCursor, position: int, name: str, kind: str
) -> history.RecordedStep | None:
    recorded = cursor.recorded(position)
    if recorded is not None:
        cursor.identity_checked(lambda: _identity(recorded, name, kind))
    return recorded


def _identity(recorded: history.RecordedStep, name: str, kind: str) -> history.StepAction:
    history.check_identity(recorded, name, kind)
    return history.ReturnRecorded(recorded.result)


class _Wait:
    """One waiting call at one position: its record so far and how it writes."""

    def __init__(
        self, cursor: ReplayCursor, position: int, name: str, kind: str, terms: dict[str, Any]
    ) -> None:
        self.cursor, self.position, self.name, self.kind = cursor, position, name, kind
        self.terms = terms
        self.recorded = _answer(cursor, position, name, kind)
        self.now = cursor.clock.now()
        self.sid = step_id(cursor.run_id, position)
        began = self.recorded.started_at if self.recorded is not None else None
        self.started: datetime = began or self.now

    def finished(self) -> Any:
        """The recorded outcome, if the call finished before; raises a recorded failure."""
        recorded = self.recorded
        if recorded is None or recorded.status in (StepStatus.PENDING, StepStatus.RUNNING):
            return _OPEN
        if recorded.status == StepStatus.COMPLETED:
            return recorded.result
        raise StepFailed.from_record(self.name, self.position, recorded.error)

    def deadline(self, timeout: float | None) -> datetime | None:
        if self.recorded is not None:
            return self.recorded.wake_at
        return None if timeout is None else self.now + timedelta(seconds=timeout)

    def _created(self) -> list[EventDraft]:
        if self.recorded is not None:
            return []
        return [step_created(self.sid, self.position, self.name, self.kind, self.terms, self.now)]

    def complete(self, result: Any, event: EventDraft) -> Any:
        row = StepRow(self.sid, self.position, self.name, self.kind, StepStatus.COMPLETED, 1,
                      self.started, input=self.terms, result=result, started_at=self.started,
                      finished_at=self.now)  # fmt: skip
        # Async is enough: what it records is keyed by the position, so a replay after a
        # crash finds the same message or signal again.
        self.cursor.write([*self._created(), event], row, sync=False)
        return result

    def timed_out(self) -> None:
        self.complete(
            None, EventDraft(EventType.WAIT_COMPLETED, self.now, self.sid, {"timed_out": True})
        )

    def suspend(self, deadline: datetime | None) -> Suspend:
        if self.recorded is None:
            row = StepRow(self.sid, self.position, self.name, self.kind, StepStatus.RUNNING, 1,
                          self.now, input=self.terms, started_at=self.now,
                          wake_at=deadline)  # fmt: skip
            wake = deadline.isoformat() if deadline else None
            created = EventDraft(
                "wait_created", self.now, self.sid, {**self.terms, "wake_at": wake}
            )
            self.cursor.write([*self._created(), created], row, sync=False)
        return Suspend(deadline)


_OPEN: Any = object()


def recv(
    cursor: ReplayCursor, topic: str, timeout: float | None, position: int | None = None
) -> Any:
    """`ctx.recv`: the oldest message on `topic` not yet received, or None at the timeout."""
    topic = check_topic(topic)
    position = cursor.next_position() if position is None else position
    wait = _Wait(cursor, position, topic, MESSAGE, {"topic": topic, "timeout": timeout})
    done = wait.finished()
    if done is not _OPEN:
        return done
    got = take_message(cursor.run_id, topic, position)
    if got is not None:
        payload = {"topic": topic, "message_id": got.id, "value": got.value}
        if got.by is not None:  # sent through the API: the log names the sender
            payload["by"] = got.by
        return wait.complete(
            got.value, EventDraft(EventType.MESSAGE_RECEIVED, wait.now, wait.sid, payload)
        )
    deadline = wait.deadline(timeout)
    if deadline is not None and deadline <= wait.now:
        return wait.timed_out()
    raise wait.suspend(deadline)


def wait_for_signal(
    cursor: ReplayCursor,
    name: str,
    match: Any,
    timeout: float | None,
    lookback: float | None,
    position: int | None = None,
) -> Any:
    """`ctx.wait_for_signal`: the payload of the signal the wait took, or None at the timeout."""
    name, match = check_signal_name(name), check_match(match)
    position = cursor.next_position() if position is None else position
    terms = {"match": match, "timeout": timeout, "lookback": lookback}
    wait = _Wait(cursor, position, name, SIGNAL, terms)
    done = wait.finished()
    if done is not _OPEN:
        return done
    rid = cursor.run_id
    row = wait_at(rid, position)
    if row is None:
        open_wait(rid, position, name, match, wait.started, timedelta(seconds=lookback or 0))
        row = wait_at(rid, position)
    deadline = wait.deadline(timeout)
    expired = deadline is not None and deadline <= wait.now
    if row is not None and row.signal_id is None and expired:
        row = close_wait_timed_out(rid, position)
    if row is not None and row.signal_id is not None:
        payload = {"name": name, "signal_id": row.signal_id, "payload": row.payload}
        by = emitter_of(row.signal_id)
        if by is not None:  # emitted through the API: the log names who emitted it
            payload["by"] = by
        return wait.complete(
            row.payload, EventDraft(EventType.SIGNAL_RECEIVED, wait.now, wait.sid, payload)
        )
    if row is not None and row.closed_at is not None:
        return wait.timed_out()
    raise wait.suspend(deadline)


def set_value(cursor: ReplayCursor, key: str, value: Any, position: int | None = None) -> None:
    """`ctx.set_value`: record `value` as the run's latest value of `key` (once per position)."""
    key = check_key(key)
    position = cursor.next_position() if position is None else position
    if _answer(cursor, position, key, VALUE) is not None:
        return
    value, size = cursor.checked(value, f"value {key!r}")
    store_value(cursor.run_id, key, value, position)
    now, sid = cursor.clock.now(), step_id(cursor.run_id, position)
    row = StepRow(sid, position, key, VALUE, StepStatus.COMPLETED, 1, now, started_at=now,
                  finished_at=now)  # fmt: skip
    events = [
        step_created(sid, position, key, VALUE, None, now),
        EventDraft(EventType.VALUE_SET, now, sid, {"key": key, "value": value}),
    ]
    cursor.write(events, row, sync=False, payload_bytes=size)


_SEND_ERRORS: dict[str, Callable[[str], Exception]] = {
    "RunFinished": RunFinished,
    "RunNotFound": RunNotFound,
}


def send(
    cursor: ReplayCursor,
    run_id: uuid.UUID | str,
    topic: str,
    value: Any,
    idempotency_key: str | None,
    position: int | None = None,
) -> int:
    """`send` from workflow code: the message is sent once however often the run replays;
    returns its id. An unknown or finished destination is recorded and raised again on replay."""
    topic = check_topic(topic)
    position = cursor.next_position() if position is None else position
    recorded = _answer(cursor, position, topic, SEND)
    if recorded is not None:
        if recorded.status == StepStatus.COMPLETED:
            return int((recorded.result or {}).get("message_id", 0))
        error = recorded.error or {}
        raise _SEND_ERRORS.get(str(error.get("type")), RunNotFound)(str(error.get("message")))
    now, sid = cursor.clock.now(), step_id(cursor.run_id, position)
    terms = {"run_id": str(run_id), "topic": topic}
    created = step_created(sid, position, topic, SEND, terms, now)
    try:
        sent = send_message(run_id, topic, value, idempotency_key=idempotency_key,
                            source=(cursor.run_id, position))  # fmt: skip
    except (RunNotFound, RunFinished) as exc:
        error = {"type": type(exc).__name__, "message": str(exc)}
        row = StepRow(sid, position, topic, SEND, StepStatus.FAILED, 1, now, input=terms,
                      error=error, started_at=now, finished_at=now)  # fmt: skip
        cursor.write([created, EventDraft(EventType.STEP_FAILED, now, sid, {"error": error})], row,
                     sync=False)  # fmt: skip
        raise
    result = {"message_id": sent.id}
    row = StepRow(sid, position, topic, SEND, StepStatus.COMPLETED, 1, now, input=terms,
                  result=result, started_at=now, finished_at=now)  # fmt: skip
    completed = EventDraft(EventType.STEP_COMPLETED, now, sid, {"attempt": 1, "result": result})
    cursor.write([created, completed], row, sync=False)
    return sent.id


def emit_signal(cursor: ReplayCursor, name: str, payload: Any, idempotency_key: str | None) -> int:
    """`emit_signal` from workflow code: emitted once however often the run replays (keyed by
    the run and position unless a key is given); returns how many runs took it."""
    key = idempotency_key or f"ff-wf:{cursor.run_id}:{cursor.position + 1}"
    return int(record_value(cursor, "emit_signal", lambda: emit(name, payload, key).delivered))
