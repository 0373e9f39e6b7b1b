"""Callbacks, workflow side: hand out a token and wait, with no worker held, for a post to it.

`ctx.create_callback` records a callback step (kind "callback") with a fresh unguessable
token before returning, so the token survives replays. A post (runtime.services.post_callback)
completes, fails or heartbeats that step and wakes the run; `Callback.wait()` returns what was
posted, or suspends the run until the nearest deadline.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from runtime import conf
from runtime.checkpoint.errors import CheckpointFailed
from runtime.core import history
from runtime.core.callbacks import (
    AwaitPost,
    CallbackTerms,
    RaiseTimedOut,
    derive_token,
    next_wait_action,
    recover_token,
    timed_out_error,
    token_digest,
)
from runtime.core.control import Abort, Suspend
from runtime.core.errors import CallbackFailed, CallbackTimedOut, FanfoldError, StepChanged
from runtime.core.identity import check_name
from runtime.core.states import EventType, StepKind, StepStatus
from runtime.core.writes import HistoryWrite, OpenStepGuard
from runtime.durable.calls import DurableCall
from runtime.durable.cursor import ReplayCursor
from runtime.durable.parking import parks
from runtime.store.runs.callback_steps import recorded_step, step_inputs

log = logging.getLogger("fanfold.callbacks")
UNRECOVERABLE = (
    "the token of callback %r at position %s of run %s cannot be recomputed (made before "
    "tokens were derived, or with a SECRET_KEY no longer in SECRET_KEY_FALLBACKS): its .token "
    "is empty on this replay; the token handed out still works"
)


class Callback:
    """A callback created by a workflow: hand out `.token`, then `.wait()` for its payload.

    Only the token's SHA-256 is stored; `.token` is derived from the step's id and the
    secret key (runtime.core.callbacks.derive_token), so a replay gets it back."""

    def __init__(
        self, cursor: ReplayCursor, position: int, name: str, token: str, terms: CallbackTerms
    ) -> None:
        self._cursor = cursor
        self._position = position
        self.name = name
        self.token = token
        self._terms = terms

    def __repr__(self) -> str:
        return f"<Callback {self.name!r} at position {self._position}>"

    @property
    def cursor(self) -> ReplayCursor:
        return self._cursor

    @parks
    def wait(self) -> Any:
        """Return the posted result; raise CallbackFailed or CallbackTimedOut.

        Until something is posted the run suspends (no worker held) until the nearest
        deadline, or until the post wakes it.
        """
        cursor = self._cursor
        while True:
            recorded = cursor.recorded(self._position)
            if recorded is None:
                raise FanfoldError(f"callback {self.name!r} has no record at {self._position}")
            action = next_wait_action(recorded, self._terms, cursor.clock.now())
            if isinstance(action, history.ReturnRecorded):
                return action.result
            if isinstance(action, RaiseTimedOut):
                raise CallbackTimedOut(action.message)
            if isinstance(action, history.RaiseRecorded):
                error = action.error or {
                    "type": "Cancelled",
                    "message": "the callback was cancelled",
                }
                raise CallbackFailed(
                    callback=self.name,
                    error_type=str(error.get("type", "Error")),
                    error_message=str(error.get("message", "")),
                )
            if isinstance(action, AwaitPost):
                raise Suspend(action.deadline)
            if record_timeout(cursor, recorded, action.reason, action.deadline):
                raise CallbackTimedOut(
                    timed_out_error(self.name, action.reason, action.deadline)["message"]
                )


def record_timeout(
    cursor: ReplayCursor, recorded: history.RecordedStep, reason: str, deadline: datetime
) -> bool:
    """Commit a callback's time-out unless a post or heartbeat got there first (then reload).

    Returns True if the time-out was recorded; either way the cursor holds the step as it is.
    """
    session = cursor.session
    call = DurableCall(cursor, recorded.position, recorded.name, StepKind.CALLBACK)
    now, sid = call.now, call.sid
    error = timed_out_error(recorded.name, reason, deadline)
    row = call.row(StepStatus.FAILED, attempt=recorded.attempt, error=error, finished_at=now,
                   callback_token=recorded.callback_token)  # fmt: skip
    payload = {"reason": reason, "deadline": deadline.isoformat()}
    event = call.event(EventType.CALLBACK_TIMED_OUT, payload)
    guard = OpenStepGuard(sid, token=session.token, due_by=now)
    try:
        # Alone in its transaction, so a refused time-out takes nothing else down with it.
        session.writer.barrier(session.key)
    except CheckpointFailed as failure:
        raise Abort(failure) from failure
    try:
        cursor.checkpoint(HistoryWrite(cursor.run_id, guard, (event,), (row,)), sync=True)
    except Abort as abort:
        if not isinstance(abort.failure.__cause__, StepChanged):
            raise
        session.writer.reset_session(session.key)
        cursor.remember(recorded_step(cursor.run_id, recorded.position))
        return False
    cursor.remember(history.RecordedStep.of(row))
    return True


def _open_callbacks(cursor: ReplayCursor) -> list[history.RecordedStep]:
    return [
        r
        for r in cursor.open_steps()
        if r.kind == "callback" and r.status in (StepStatus.PENDING, StepStatus.RUNNING)
    ]


def expire_due_callbacks(cursor: ReplayCursor) -> None:
    """Record the time-out of every open callback whose deadline has passed.

    Called at the start of each pass of a run, before the workflow code runs: a callback that
    timed out while the run waited on something else (a sleep, another callback, a fan-out)
    is recorded when its deadline woke the run, not when the code next reaches `.wait()`.
    """
    now = cursor.clock.now()
    due = [r for r in _open_callbacks(cursor) if r.wake_at is not None and r.wake_at <= now]
    if not due:
        return
    positions = [r.position for r in due]
    inputs = step_inputs(cursor.run_id, positions)
    for recorded in due:
        if recorded.wake_at is None:
            continue
        terms = CallbackTerms.from_input(inputs.get(recorded.position))
        reason = terms.reason(recorded.started_at or recorded.wake_at, now)
        record_timeout(cursor, recorded, reason, recorded.wake_at)


def next_callback_deadline(cursor: ReplayCursor) -> datetime | None:
    """The nearest deadline of the run's open callbacks: the run must wake by then."""
    deadlines = [r.wake_at for r in _open_callbacks(cursor) if r.wake_at is not None]
    return min(deadlines, default=None)


def create_callback(
    cursor: ReplayCursor,
    name: str,
    *,
    timeout: float | timedelta | None = None,
    heartbeat_timeout: float | timedelta | None = None,
) -> Callback:
    """Create (or, on replay, find again) the callback at the cursor's next position."""
    check_name(name, "callback")
    terms = CallbackTerms.of(timeout, heartbeat_timeout)
    position = cursor.next_position()
    call = DurableCall(cursor, position, name, StepKind.CALLBACK, terms.as_input())
    if call.recorded is not None:
        if not call.recorded.callback_token:
            raise FanfoldError(f"callback {name!r} at position {position} has no recorded token")
        token = recover_token(
            conf.token_secrets(), cursor.run_id, call.sid, call.recorded.callback_token
        )
        if token is None:
            log.warning(UNRECOVERABLE, name, position, cursor.run_id)
        return Callback(cursor, position, name, token or "", terms)
    token = derive_token(conf.token_secrets()[0], cursor.run_id, call.sid)
    deadline = terms.first_deadline(call.now)
    expires = terms.expires_at(call.now)
    created = call.event(
        EventType.CALLBACK_CREATED,
        {
            "name": name,
            **terms.as_input(),
            "expires_at": expires.isoformat() if expires else None,
            "deadline": deadline.isoformat() if deadline else None,
        },
    )
    # Synchronous: the token is handed out right after this returns, so it must be durable.
    call.wait(created, deadline, sync=True, callback_token=token_digest(token))  # never the token
    return Callback(cursor, position, name, token, terms)
