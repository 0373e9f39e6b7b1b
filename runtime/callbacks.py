"""Callbacks: a workflow hands out a token and waits, with no worker held, for a post to it.

`ctx.create_callback` records a callback step (kind "callback") with a fresh unguessable
token before returning, so the token survives replays. `post_callback` completes, fails or
heartbeats that step through the checkpoint store and wakes the run; `Callback.wait()` returns
what was posted, or suspends the run until the nearest deadline.
"""

from __future__ import annotations

import re
import secrets
import uuid
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from runtime import conf
from runtime.checkpoint.batching import Checkpoint
from runtime.checkpoint.errors import CheckpointFailed
from runtime.context import Suspend
from runtime.core import history as h
from runtime.core.callbacks import (
    AwaitPost,
    CallbackTerms,
    RaiseTimedOut,
    TimeOut,
    next_wait_action,
    timed_out_error,
)
from runtime.core.clock import Clock, SystemClock
from runtime.core.errors import (
    FanfoldError,
    PayloadError,
    RunAlreadyFinished,
    StepChanged,
)
from runtime.core.identity import check_name, step_id
from runtime.core.jsonvalues import checked
from runtime.core.writes import EventDraft, HistoryWrite, OpenStepGuard, RunPatch, StepRow
from runtime.session import Abort

if TYPE_CHECKING:
    from runtime.context import DurableContext

TOKEN_BYTES = 32  # 256 bits from the OS's CSPRNG
MAX_TOKEN_LENGTH = 64
# What token_urlsafe produces; anything else (a NUL byte, say) cannot be a token.
_TOKEN_TEXT = re.compile(r"[A-Za-z0-9_-]+")
_MISSING: Any = object()


class CallbackFailed(FanfoldError):
    """`Callback.wait()` found an error posted to the callback."""

    code = "callback_failed"

    def __init__(
        self, message: str = "", callback: str = "", error_type: str = "", error_message: str = ""
    ) -> None:
        super().__init__(message or f"callback {callback!r} failed: {error_type}: {error_message}")
        self.callback = callback
        self.error_type = error_type
        self.error_message = error_message

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            self.__class__,
            (self.message, self.callback, self.error_type, self.error_message),
        )


class CallbackTimedOut(FanfoldError):
    """`Callback.wait()` passed its `timeout`, or its `heartbeat_timeout` with no heartbeat."""

    code = "callback_timed_out"


class CallbackNotFound(FanfoldError, LookupError):
    code = "callback_not_found"


class CallbackAlreadyCompleted(FanfoldError):
    """A result, error or heartbeat arrived for a callback that already has its outcome."""

    code = "callback_completed"


class Callback:
    """A callback created by a workflow: hand out `.token`, then `.wait()` for its payload."""

    def __init__(
        self, ctx: DurableContext, position: int, name: str, token: str, terms: CallbackTerms
    ) -> None:
        self._ctx = ctx
        self._position = position
        self.name = name
        self.token = token
        self._terms = terms

    def __repr__(self) -> str:
        return f"<Callback {self.name!r} at position {self._position}>"

    def wait(self) -> Any:
        """Return the posted result; raise CallbackFailed or CallbackTimedOut.

        Until something is posted the run suspends (no worker held) until the nearest
        deadline, or until the post wakes it.
        """
        ctx = self._ctx
        while True:
            recorded = ctx._recorded[self._position]
            action = next_wait_action(recorded, self._terms, ctx._clock.now())
            if isinstance(action, h.ReturnRecorded):
                return action.result
            if isinstance(action, RaiseTimedOut):
                raise CallbackTimedOut(action.message)
            if isinstance(action, h.RaiseRecorded):
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
            if self._record_timeout(recorded, action):
                raise CallbackTimedOut(
                    timed_out_error(self.name, action.reason, action.deadline)["message"]
                )

    def _record_timeout(self, recorded: h.RecordedStep, action: TimeOut) -> bool:
        """Commit the time-out unless a post or heartbeat got there first (then reload)."""
        ctx = self._ctx
        session = ctx._session
        now = ctx._clock.now()
        sid = step_id(ctx.run_id, self._position)
        error = timed_out_error(self.name, action.reason, action.deadline)
        row = StepRow(
            sid,
            self._position,
            self.name,
            "callback",
            h.FAILED,
            recorded.attempt,
            recorded.started_at or now,
            error=error,
            started_at=recorded.started_at,
            finished_at=now,
            callback_token=self.token,
        )
        event = EventDraft(
            "callback_timed_out",
            now,
            sid,
            {"reason": action.reason, "deadline": action.deadline.isoformat()},
        )
        guard = OpenStepGuard(sid, token=session.token, due_by=now)
        try:
            # Alone in its transaction, so a refused time-out takes nothing else down with it.
            session.writer.barrier(session.key)
        except CheckpointFailed as failure:
            raise Abort(failure) from failure
        try:
            session.checkpoint(HistoryWrite(ctx.run_id, guard, (event,), (row,)), sync=True)
        except Abort as abort:
            if not isinstance(abort.failure.__cause__, StepChanged):
                raise
            session.writer.reset_session(session.key)
            ctx._recorded[self._position] = _reload(ctx.run_id, self._position)
            return False
        ctx._recorded[self._position] = h.RecordedStep.of(row)
        return True


def create_callback(
    ctx: DurableContext,
    name: str,
    *,
    timeout: Any = None,
    heartbeat_timeout: Any = None,
) -> Callback:
    """Create (or, on replay, find again) the callback at the next position of `ctx`."""
    check_name(name, "callback")
    terms = CallbackTerms.of(timeout, heartbeat_timeout)
    position = ctx._next_position()
    recorded = ctx._recorded.get(position)
    if recorded is not None:
        ctx._identity_checked(lambda: _identity(recorded, name))
        if not recorded.callback_token:
            raise FanfoldError(f"callback {name!r} at position {position} has no recorded token")
        return Callback(ctx, position, name, recorded.callback_token, terms)
    token = secrets.token_urlsafe(TOKEN_BYTES)
    now = ctx._clock.now()
    sid = step_id(ctx.run_id, position)
    deadline = terms.first_deadline(now)
    row = StepRow(
        sid,
        position,
        name,
        "callback",
        h.RUNNING,
        1,
        now,
        input=terms.as_input(),
        started_at=now,
        wake_at=deadline,
        callback_token=token,
    )
    expires = terms.expires_at(now)
    events = [
        EventDraft(
            "step_created",
            now,
            sid,
            {"position": position, "name": name, "kind": "callback", "input": terms.as_input()},
        ),
        EventDraft(
            "callback_created",
            now,
            sid,
            {
                "name": name,
                **terms.as_input(),
                "expires_at": expires.isoformat() if expires else None,
                "deadline": deadline.isoformat() if deadline else None,
            },
        ),
    ]
    # Synchronous: the token is handed out right after this returns, so it must be durable.
    ctx._write(events, row, sync=True)
    ctx._recorded[position] = h.RecordedStep.of(row)
    return Callback(ctx, position, name, token, terms)


@dataclass(frozen=True)
class CallbackReceipt:
    """What a post did: the callback's name, its status now and its current deadline."""

    run_id: uuid.UUID
    callback: str
    status: str
    deadline: datetime | None


def post_callback(
    token: str,
    *,
    result: Any = _MISSING,
    error: Any = None,
    heartbeat: bool = False,
    clock: Clock | None = None,
) -> CallbackReceipt:
    """Post a result, an error (`{"type", "message"}`) or a heartbeat to a callback.

    A result or error completes the callback once and wakes its run; a heartbeat moves its
    heartbeat deadline. Raises CallbackNotFound, CallbackAlreadyCompleted, RunAlreadyFinished,
    PayloadError (not JSON, malformed error) or PayloadTooLarge; nothing is written then.
    """
    given = (result is not _MISSING) + (error is not None) + bool(heartbeat)
    if given != 1:
        raise PayloadError("post exactly one of a result, an error or a heartbeat")
    now = (clock or SystemClock()).now()
    step = _open_step(token)
    limit = conf.get().MAX_PAYLOAD_BYTES
    current = _row(step)
    events: tuple[EventDraft, ...] = ()
    size = 0
    if heartbeat:
        terms = CallbackTerms.from_input(step.input)
        created = step.started_at or step.created_at
        row = replace(current, wake_at=terms.deadline_after_heartbeat(created, now))
    elif result is not _MISSING:
        value, size = checked(result, f"callback {step.name!r} result", limit)
        row = replace(current, status=h.COMPLETED, result=value, finished_at=now, wake_at=None)
        events = (EventDraft("callback_received", now, step.id, {"result": value}),)
    else:
        record, size = checked(_error_record(error), f"callback {step.name!r} error", limit)
        row = replace(current, status=h.FAILED, error=record, finished_at=now, wake_at=None)
        events = (EventDraft("callback_received", now, step.id, {"error": record}),)
    # A result makes the run due now: if the enqueue below is lost, the sweep still finds it.
    due = None if heartbeat else RunPatch(wake_at=now)
    write = HistoryWrite(
        step.run_id, OpenStepGuard(step.id), events, (row,), run=due, wake=not heartbeat
    )
    _commit(write, step.name, 512 + 2 * size)
    if not heartbeat:
        from runtime import dispatch

        dispatch.enqueue_run(step.run_id)
    return CallbackReceipt(step.run_id, step.name, row.status, row.wake_at)


# -- plumbing -------------------------------------------------------------------------------


def _identity(recorded: h.RecordedStep, name: str) -> h.StepAction:
    h.check_identity(recorded, name, "callback")
    return h.ReturnRecorded(None)


def _reload(run_id: uuid.UUID, position: int) -> h.RecordedStep:
    from runtime.models import Step

    step = Step.objects.get(run_id=run_id, position=position)
    return h.RecordedStep.of(_row(step))


def _open_step(token: str) -> Any:
    from runtime.models import FINISHED_RUN_STATES, Step, StepStatus

    step = None
    if (
        isinstance(token, str)
        and 0 < len(token) <= MAX_TOKEN_LENGTH
        and _TOKEN_TEXT.fullmatch(token)
    ):
        step = Step.objects.select_related("run").filter(callback_token=token).first()
    if step is None:
        raise CallbackNotFound("no callback has this token")
    if step.run.status in FINISHED_RUN_STATES:
        raise RunAlreadyFinished(f"the run of callback {step.name!r} has already finished")
    if step.status not in (StepStatus.PENDING, StepStatus.RUNNING):
        raise CallbackAlreadyCompleted(f"callback {step.name!r} has already been completed")
    return step


def _row(step: Any) -> StepRow:
    return StepRow(
        step.id,
        step.position,
        step.name,
        step.kind,
        step.status,
        step.attempt,
        step.created_at,
        input=step.input,
        result=step.result,
        error=step.error,
        started_at=step.started_at,
        finished_at=step.finished_at,
        wake_at=step.wake_at,
        callback_token=step.callback_token,
    )


def _error_record(error: Any) -> dict[str, str]:
    if not isinstance(error, dict) or not isinstance(error.get("type"), str) or not error["type"]:
        raise PayloadError('a callback error must be an object with a non-empty string "type"')
    message = error.get("message", "")
    if not isinstance(message, str):
        raise PayloadError('a callback error\'s "message" must be a string')
    extra = sorted(set(error) - {"type", "message"})
    if extra:
        raise PayloadError(f"a callback error takes only type and message, not {', '.join(extra)}")
    return {"type": error["type"], "message": message}


def _commit(write: HistoryWrite, name: str, size: int) -> None:
    from runtime.store import writer

    session = f"callback/{write.run_id}/{uuid.uuid4().hex}"
    w = writer()
    try:
        w.write(Checkpoint(session=session, payload=write, size=size, sync=True))
    except CheckpointFailed as failure:
        cause = failure.__cause__
        if isinstance(cause, RunAlreadyFinished):
            raise RunAlreadyFinished(f"the run of callback {name!r} has already finished") from None
        if isinstance(cause, StepChanged):
            raise CallbackAlreadyCompleted(
                f"callback {name!r} has already been completed"
            ) from None
        raise
    finally:
        w.reset_session(session)
