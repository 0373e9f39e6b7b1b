"""The workflow side of updates (contract section 2l): `ctx.next_update` and `upd.reply`.

`ctx.next_update` records a step (kind "update") that waits with no worker held, as `ctx.recv`
does: the run suspends until an accepted update wakes it or the timeout passes. The update it
takes is marked with its position before it is recorded (`update_received`), so a pass that
lost its lease in between finds the same one again. `upd.reply` / `upd.reject` take the next
position (kind "reply"): the answer is written to the update's row (the first answer stays: a
replay after a crash answers nothing twice), the waiting caller is woken by the commit's
notification, and `update_replied` is recorded.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from runtime import conf
from runtime.core.errors import FanfoldError, InvalidArguments
from runtime.core.identity import check_name
from runtime.core.states import EventType, StepKind, StepStatus
from runtime.durable.calls import DurableCall
from runtime.durable.cursor import ReplayCursor
from runtime.durable.messaging import _OPEN, _Wait
from runtime.models import UpdateStatus
from runtime.store.messaging.updates import UpdateRow, answer_update, take_update
from runtime.streaming.wakeups import signal_local, signals

NEXT_UPDATE = "ctx.next_update"

# `answer(update_id, name, status, reply, reason)`: the context's durable answer.
Answer = Callable[[str, str, str, Any, "str | None"], None]


class Update:
    """An accepted update `ctx.next_update` returned: answer it once, with `reply(value)` or
    `reject(reason)` (both durable; replayed, they answer nothing again)."""

    def __init__(self, update_id: str, name: str, payload: Any, answer: Answer) -> None:
        self.id = update_id
        self.name = name
        self.payload = payload
        self._answer = answer
        self._answered = False

    def __repr__(self) -> str:
        return f"<Update {self.name} {self.id}>"

    def reply(self, value: Any = None) -> None:
        """Answer the update with `value` (JSON): the caller's `update()` returns it."""
        self._answered_once()
        self._answer(self.id, self.name, UpdateStatus.REPLIED, value, None)

    def reject(self, reason: str) -> None:
        """Refuse the update: the caller's `update()` raises UpdateRejected(reason)."""
        if not isinstance(reason, str):
            raise TypeError("upd.reject takes a reason (a string)")
        self._answered_once()
        self._answer(self.id, self.name, UpdateStatus.REJECTED, None, reason)

    def _answered_once(self) -> None:
        if self._answered:
            raise FanfoldError(f"update {self.id!r} has been answered already")
        self._answered = True


def check_update_names(names: Sequence[object]) -> tuple[str, ...]:
    """Update names as stored; InvalidArguments if not."""
    try:
        return tuple(check_name(name, "update") for name in names)
    except ValueError as exc:
        raise InvalidArguments(str(exc)) from None


def next_update(
    cursor: ReplayCursor,
    names: Sequence[str],
    timeout: float | None,
    answer: Answer,
    position: int | None = None,
) -> Update | None:
    """`ctx.next_update`: the oldest accepted update with one of `names` (any when none) not
    taken yet, or None at the timeout."""
    names = check_update_names(names)
    position = cursor.next_position() if position is None else position
    terms = {"names": list(names), "timeout": timeout}
    wait = _Wait(cursor, position, NEXT_UPDATE, StepKind.UPDATE, terms)
    done = wait.finished()
    if done is not _OPEN:
        return None if done is None else Update(done["id"], done["name"], done["payload"], answer)
    got = take_update(cursor.run_id, names, position)
    linger = conf.get().UPDATE_LINGER
    if got is None and linger > 0 and cursor.session.epoch == 0:
        got = _lingered(cursor, names, position, linger)
    if got is not None:
        payload = {"update_id": got.id, "name": got.name, "payload": got.payload}
        if got.by is not None:  # sent through the API: the log names the sender
            payload["by"] = got.by
        record = {"id": got.id, "name": got.name, "payload": got.payload}
        wait.complete(record, EventType.UPDATE_RECEIVED, payload)
        return Update(got.id, got.name, got.payload, answer)
    deadline = wait.deadline(timeout)
    if deadline is not None and deadline <= wait.now:
        wait.timed_out()
        return None
    raise wait.suspend(deadline)


def _lingered(
    cursor: ReplayCursor, names: Sequence[str], position: int, seconds: float
) -> UpdateRow | None:
    """FANFOLD_UPDATE_LINGER: keep the worker up to `seconds` for the next update, woken by
    its acceptance's notification, so that a conversation's next update needs no replay.
    Only a pass's first epoch lingers: a pass replaying after a wake-up suspends at once."""
    rid = cursor.run_id
    hub = signals()
    hub.watch(rid)
    try:
        end = time.monotonic() + seconds
        while True:
            seen = hub.seen(rid)
            got = take_update(rid, names, position)
            left = end - time.monotonic()
            if got is not None or left <= 0:
                return got
            hub.wait(rid, seen, left)
    finally:
        hub.unwatch(rid)


def answer(
    cursor: ReplayCursor,
    update_id: str,
    name: str,
    status: str,
    reply: Any,
    reason: str | None,
    position: int | None = None,
) -> None:
    """`upd.reply` / `upd.reject`: the update's answer, written once, then recorded."""
    position = cursor.next_position() if position is None else position
    call = DurableCall(cursor, position, name, StepKind.REPLY, {"update_id": update_id})
    if call.recorded is not None:
        return
    size = 0
    if status == UpdateStatus.REPLIED:
        reply, size = cursor.checked(reply, f"reply to update {name!r}")
    row = answer_update(cursor.run_id, update_id, status, reply, reason, position)
    signal_local(cursor.run_id)  # the answer's commit notified the other processes
    payload: dict[str, Any] = {"update_id": update_id, "name": name, "status": row.status}
    if row.status == UpdateStatus.REPLIED:
        payload["reply"] = row.reply
    else:
        payload["reason"] = row.reason
    event = call.event(EventType.UPDATE_REPLIED, payload)
    call.finish(StepStatus.COMPLETED, event, payload_bytes=size, result={"status": row.status})
