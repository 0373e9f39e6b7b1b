"""The workflow side of messages, values and signals: each call at a position of the history.

`ctx.recv` and `ctx.wait_for_signal` record a step (kind "message" / "signal") that waits with
no worker held: the run suspends until a delivery wakes it or the timeout passes, and the
received message or signal is recorded (`message_received`, `signal_received`) so a replay
returns the same one. `ctx.set_value` and a `send` from workflow code record a completed step
after their effect, which is keyed by the position, so a replay neither repeats nor regresses it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from runtime.core.control import Suspend
from runtime.core.errors import RunFinished, RunNotFound, StepFailed
from runtime.core.matching import check_match
from runtime.core.states import EventType, StepKind, StepStatus
from runtime.durable.calls import DurableCall, record_value
from runtime.durable.cursor import ReplayCursor
from runtime.messaging.mailbox import check_topic, send_message
from runtime.messaging.signals import check_signal_name, emit
from runtime.messaging.values import check_key, store_value
from runtime.store.messaging.messages import take_message
from runtime.store.messaging.signals import close_wait_timed_out, emitter_of, open_wait, wait_at

MESSAGE, SIGNAL, VALUE, SEND = StepKind.MESSAGE, StepKind.SIGNAL, StepKind.VALUE, StepKind.SEND


class _Wait:
    """One waiting call at one position: its record so far and how it writes."""

    def __init__(
        self, cursor: ReplayCursor, position: int, name: str, kind: str, terms: dict[str, Any]
    ) -> None:
        self.call = DurableCall(cursor, position, name, kind, terms)
        self.terms = terms
        self.now = self.call.now
        self.started = self.call.started

    def finished(self) -> Any:
        """The recorded outcome, if the call finished before; raises a recorded failure."""
        recorded = self.call.recorded
        if recorded is None or recorded.status in (StepStatus.PENDING, StepStatus.RUNNING):
            return _OPEN
        if recorded.status == StepStatus.COMPLETED:
            return recorded.result
        raise StepFailed.from_record(self.call.name, self.call.position, recorded.error)

    def deadline(self, timeout: float | None) -> datetime | None:
        if self.call.recorded is not None:
            return self.call.recorded.wake_at
        return None if timeout is None else self.now + timedelta(seconds=timeout)

    def complete(self, result: Any, event: str, payload: dict[str, Any]) -> Any:
        # Async is enough: what it records is keyed by the position, so a replay after a
        # crash finds the same message or signal again.
        self.call.finish(StepStatus.COMPLETED, self.call.event(event, payload), result=result)
        return result

    def timed_out(self) -> None:
        self.complete(None, EventType.WAIT_COMPLETED, {"timed_out": True})

    def suspend(self, deadline: datetime | None) -> Suspend:
        if self.call.recorded is None:
            wake = deadline.isoformat() if deadline else None
            created = self.call.event(EventType.WAIT_CREATED, {**self.terms, "wake_at": wake})
            self.call.wait(created, deadline)
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
        return wait.complete(got.value, EventType.MESSAGE_RECEIVED, payload)
    deadline = wait.deadline(timeout)
    if deadline is not None and deadline <= wait.now:
        return wait.timed_out()
    raise wait.suspend(deadline)


_UNREAD = object()


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
        by = getattr(row, "emitted_by", _UNREAD)  # read with the wait (store.messaging.signals)
        if by is _UNREAD:
            by = emitter_of(row.signal_id)
        if by is not None:  # emitted through the API: the log names who emitted it
            payload["by"] = by
        return wait.complete(row.payload, EventType.SIGNAL_RECEIVED, payload)
    if row is not None and row.closed_at is not None:
        return wait.timed_out()
    raise wait.suspend(deadline)


def set_value(cursor: ReplayCursor, key: str, value: Any, position: int | None = None) -> None:
    """`ctx.set_value`: record `value` as the run's latest value of `key` (once per position)."""
    key = check_key(key)
    position = cursor.next_position() if position is None else position
    call = DurableCall(cursor, position, key, VALUE)
    if call.recorded is not None:
        return
    value, size = cursor.checked(value, f"value {key!r}")
    store_value(cursor.run_id, key, value, position)
    event = call.event(EventType.VALUE_SET, {"key": key, "value": value})
    call.finish(StepStatus.COMPLETED, event, payload_bytes=size)


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
    terms = {"run_id": str(run_id), "topic": topic}
    call = DurableCall(cursor, position, topic, SEND, terms)
    recorded = call.recorded
    if recorded is not None:
        if recorded.status == StepStatus.COMPLETED:
            return int((recorded.result or {}).get("message_id", 0))
        error = recorded.error or {}
        raise _SEND_ERRORS.get(str(error.get("type")), RunNotFound)(str(error.get("message")))
    try:
        sent = send_message(run_id, topic, value, idempotency_key=idempotency_key,
                            source=(cursor.run_id, position))  # fmt: skip
    except (RunNotFound, RunFinished) as exc:
        error = {"type": type(exc).__name__, "message": str(exc)}
        failed = call.event(EventType.STEP_FAILED, {"error": error})
        call.finish(StepStatus.FAILED, failed, error=error)
        raise
    result = {"message_id": sent.id}
    completed = call.event(EventType.STEP_COMPLETED, {"attempt": 1, "result": result})
    call.finish(StepStatus.COMPLETED, completed, result=result)
    return sent.id


def emit_signal(cursor: ReplayCursor, name: str, payload: Any, idempotency_key: str | None) -> int:
    """`emit_signal` from workflow code: emitted once however often the run replays (keyed by
    the run and position unless a key is given); returns how many runs took it."""
    key = idempotency_key or f"ff-wf:{cursor.run_id}:{cursor.position + 1}"
    return int(record_value(cursor, "emit_signal", lambda: emit(name, payload, key).delivered))
