"""Callback posts: a result, an error or a heartbeat posted to a callback by its token."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from runtime import conf
from runtime.checkpoint.errors import CheckpointFailed
from runtime.core.callbacks import CallbackTerms, token_digest, token_run
from runtime.core.clock import Clock, current_clock
from runtime.core.errors import (
    CallbackAlreadyCompleted,
    CallbackNotFound,
    PayloadError,
    RunAlreadyFinished,
    StepChanged,
)
from runtime.core.jsonvalues import checked
from runtime.core.states import EventType
from runtime.core.writes import EventDraft, HistoryWrite, OpenStepGuard, RunPatch
from runtime.dispatch import enqueue_run
from runtime.models import FINISHED_RUN_STATES, Step, StepStatus
from runtime.services.cancelling import Actor, with_actor
from runtime.store import write_now
from runtime.store.runs.run_rows import callback_step

MAX_TOKEN_LENGTH = 96
# What token_urlsafe produces; anything else (a NUL byte, say) cannot be a token.
_TOKEN_TEXT = re.compile(r"[A-Za-z0-9_-]+")
_MISSING: Any = object()


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
    by: Actor | None = None,
) -> CallbackReceipt:
    """Post a result, an error (`{"type", "message"}`) or a heartbeat to a callback.

    `by` names the authenticated user who posted, if any, in the callback_received event.
    A result or error completes the callback once and wakes its run; a heartbeat moves its
    heartbeat deadline. Raises CallbackNotFound, CallbackAlreadyCompleted, RunAlreadyFinished,
    PayloadError (not JSON, malformed error) or PayloadTooLarge; nothing is written then.
    """
    given = (result is not _MISSING) + (error is not None) + bool(heartbeat)
    if given != 1:
        raise PayloadError("post exactly one of a result, an error or a heartbeat")
    now = (clock or current_clock()).now()
    step = _open_step(token)
    limit = conf.get().MAX_PAYLOAD_BYTES
    current = step.as_row()
    events: tuple[EventDraft, ...] = ()
    size = 0
    if heartbeat:
        terms = CallbackTerms.from_input(step.input)
        created = step.started_at or step.created_at
        row = replace(current, wake_at=terms.deadline_after_heartbeat(created, now))
    elif result is not _MISSING:
        value, size = checked(result, f"callback {step.name!r} result", limit)
        row = replace(
            current, status=StepStatus.COMPLETED, result=value, finished_at=now, wake_at=None
        )
        events = (
            EventDraft(
                EventType.CALLBACK_RECEIVED, now, step.id, with_actor({"result": value}, by)
            ),
        )
    else:
        record, size = checked(_error_record(error), f"callback {step.name!r} error", limit)
        row = replace(
            current, status=StepStatus.FAILED, error=record, finished_at=now, wake_at=None
        )
        events = (
            EventDraft(
                EventType.CALLBACK_RECEIVED, now, step.id, with_actor({"error": record}, by)
            ),
        )
    # A result makes the run due now: if the enqueue below is lost, the sweep still finds it.
    due = None if heartbeat else RunPatch(wake_at=now)
    write = HistoryWrite(
        step.run_id, OpenStepGuard(step.id), events, (row,), run=due, wake=not heartbeat
    )
    _commit(write, step.name, 512 + 2 * size)
    if not heartbeat:
        run = step.run  # read with the step: to the node that keeps it parked, if one does
        enqueue_run(step.run_id, priority=run.priority, queue=run.warm_queue)
    return CallbackReceipt(step.run_id, step.name, row.status, row.wake_at)


def _open_step(token: str) -> Step:
    step = None
    if (
        isinstance(token, str)
        and 0 < len(token) <= MAX_TOKEN_LENGTH
        and _TOKEN_TEXT.fullmatch(token)
    ):
        digest = token_digest(token)  # only the digest is stored
        step = callback_step(digest, token_run(token))
    if step is None:
        raise CallbackNotFound("no callback has this token")
    if step.run.status in FINISHED_RUN_STATES:
        raise RunAlreadyFinished(f"the run of callback {step.name!r} has already finished")
    if step.status not in (StepStatus.PENDING, StepStatus.RUNNING):
        raise CallbackAlreadyCompleted(f"callback {step.name!r} has already been completed")
    return step


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
    session = f"callback/{write.run_id}/{uuid.uuid4().hex}"
    try:
        write_now(write, session=session, size=size)
    except CheckpointFailed as failure:
        cause = failure.__cause__
        if isinstance(cause, RunAlreadyFinished):
            raise RunAlreadyFinished(f"the run of callback {name!r} has already finished") from None
        if isinstance(cause, StepChanged):
            raise CallbackAlreadyCompleted(
                f"callback {name!r} has already been completed"
            ) from None
        raise
