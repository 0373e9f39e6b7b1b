"""Sending an update and waiting for its answer; reading one by id.

The validator runs here, in the caller's process, before anything is recorded. An accepted
update is committed with a wake-up of its run; the caller then waits on the run's signals
(runtime.streaming.wakeups: a PostgreSQL notification that leaves with the answer's commit),
looking at the database only when signalled or at the fallback's period.
"""

from __future__ import annotations

import inspect
import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError

from runtime import conf
from runtime.core import wait_driver
from runtime.core.errors import (
    InvalidArguments,
    RunCancelled,
    RunFailed,
    RunFinished,
    RunNotFound,
    UnknownUpdate,
    UpdateNotFound,
    UpdateRejected,
    UpdateValidatorFailed,
)
from runtime.core.identity import as_run_id, check_idempotency_key, check_name
from runtime.core.jsonvalues import checked
from runtime.messaging.wake import enqueue_woken
from runtime.models import RunStatus, UpdateStatus
from runtime.registry import WorkflowFunction, registry
from runtime.registry.functions import UpdateValidator
from runtime.store.messaging.updates import (
    RunState,
    UpdateRow,
    answer_and_run,
    insert_update,
    run_state,
)
from runtime.streaming.wakeups import fallback_seconds, signal_local, signals

logger = logging.getLogger("runtime.updates")

DEFAULT_TIMEOUT = 30.0
MESSAGE_CHARS = 500  # of a failed validator's message, as the caller is told it
# PostgreSQL's WAL writer flushes an unflushed commit within three wal_writer_delay (200 ms
# by default): a caller waiting at least this long finds its update durable by the time it
# is told anything (the answer, whose commit is flushed, or TimeoutError).
FLUSHED_WITHIN = 1.0


@dataclass(frozen=True)
class UpdateInfo:
    """An update as `get_update` reads it: `status` is pending, replied or rejected."""

    id: str
    name: str
    payload: Any
    status: str
    reply: Any = None
    reason: str | None = None


def check_update_id(update_id: object) -> str:
    """A caller's update id as stored; InvalidArguments if not."""
    try:
        return check_idempotency_key(update_id)
    except ValueError as exc:
        raise InvalidArguments(str(exc).replace("idempotency_key", "update_id")) from None


def validated(wf: WorkflowFunction[..., Any], name: object, payload: Any) -> tuple[str, Any]:
    """(name, payload) of an update workflow `wf` declares, its payload JSON within the size
    limit and accepted by its validator; UnknownUpdate, PayloadError or UpdateRejected if not.
    """
    try:
        name = check_name(name, "update")
    except ValueError as exc:
        raise InvalidArguments(str(exc)) from None
    if name not in wf.updates:
        raise UnknownUpdate(f"workflow {wf.name!r} declares no update {name!r}")
    payload, _ = checked(payload, f"update {name!r} payload", conf.get().MAX_PAYLOAD_BYTES)
    validator = wf.updates[name]
    if validator is not None:
        run_validator(wf.name, name, validator, payload)
    return name, payload


def run_validator(workflow: str, name: str, validator: UpdateValidator, payload: Any) -> None:
    """Run update `name`'s validator on its payload. A refusal (ValueError, Django's
    ValidationError, UpdateRejected) raises UpdateRejected with its message; anything else it
    raises is logged with its traceback and raises UpdateValidatorFailed (type and message), so
    that a validator's bug refuses the update instead of failing the caller's request."""
    try:
        result = validator(payload)
        if inspect.isawaitable(result):  # an async validator slipped past the declaration check
            getattr(result, "close", lambda: None)()
            raise TypeError(
                "the validator returned an awaitable: validators must be plain functions"
            )
    except UpdateRejected as exc:
        raise UpdateRejected(str(exc) or f"update {name!r} refused") from None
    except (ValueError, ValidationError) as exc:
        raise UpdateRejected(_refusal_message(exc) or f"update {name!r} refused") from None
    except Exception as exc:
        logger.warning(
            "the validator of update %r of workflow %r raised %s", name, workflow,
            type(exc).__name__, exc_info=True,
        )  # fmt: skip
        raise UpdateValidatorFailed(
            update=name, error_type=type(exc).__name__, error_message=str(exc)[:MESSAGE_CHARS]
        ) from None


def _refusal_message(exc: ValueError | ValidationError) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(exc.messages)
    return str(exc)


def accept_update(
    run_id: uuid.UUID | str,
    name: str,
    payload: Any,
    *,
    update_id: str | None = None,
    by: dict[str, Any] | None = None,
    checked_already: bool = False,
    flush: bool = True,
) -> tuple[uuid.UUID, UpdateRow, bool]:
    """Validate and record an update for the run, waking it; (run id, update, created).

    A repeated `update_id` returns the first update (created False) without validating again.
    Raises RunNotFound, RunFinished, UnknownUpdate, InvalidArguments, PayloadError or
    UpdateRejected before anything is recorded. `flush` False: the acceptance commits without
    waiting for the WAL flush, for a caller that waits for the answer (whose flushed commit
    flushes the acceptance with it) long enough for the WAL writer to flush it anyway.
    """
    rid = as_run_id(run_id)
    uid = uuid.uuid4().hex if update_id is None else check_update_id(update_id)
    state = _state(rid)
    if update_id is not None:
        found = answer_and_run(rid, uid)
        if found is not None:
            return rid, found[0], False
    if state.finished:
        raise RunFinished(f"run {rid} has finished ({state.status}): it takes no updates")
    if not checked_already:
        name, payload = validated(_workflow_of(state), name, payload)
    row, created = insert_update(rid, uid, name, payload, by=by, enqueue=enqueue_woken, flush=flush)
    signal_local(rid)  # a run lingering in this process (the embedded worker)
    return rid, row, created


def send_update(
    run_id: uuid.UUID | str,
    name: str,
    payload: Any = None,
    *,
    update_id: str | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    by: dict[str, Any] | None = None,
) -> Any:
    """Send update `name` to the run and return its reply (see `RunHandle.update`)."""
    seconds = as_timeout(timeout)
    waits = seconds is None or seconds >= FLUSHED_WITHIN
    rid, row, _ = accept_update(run_id, name, payload, update_id=update_id, by=by, flush=not waits)
    return outcome(wait_for_answer(rid, row.id, seconds))


def wait_for_answer(rid: uuid.UUID, update_id: str, timeout: float | None) -> UpdateRow:
    """The update once answered. Raises TimeoutError after `timeout` seconds (the update stays
    accepted), RunFailed / RunCancelled / RunFinished if the run ended without answering it."""
    if timeout is None or timeout > 0:  # a test environment runs the run here, until answered
        wait_driver.drive(rid, timeout, until=lambda: _answered(rid, update_id))
    deadline = None if timeout is None else time.monotonic() + timeout
    hub = signals()
    hub.watch(rid)
    try:
        while True:
            seen = hub.seen(rid)
            found = answer_and_run(rid, update_id)
            if found is None:
                raise UpdateNotFound(f"run {rid} has no update {update_id!r}")
            row, state = found
            if row.answered:
                return row
            if state.finished:
                raise _ended_without_answer(rid, update_id, state)
            left = fallback_seconds() if deadline is None else deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(
                    f"update {update_id!r} of run {rid} is still pending after {timeout} s; "
                    "get_update(run_id, update_id) reads it later"
                )
            hub.wait(rid, seen, min(left, fallback_seconds()))
    finally:
        hub.unwatch(rid)


def _answered(rid: uuid.UUID, update_id: str) -> bool:
    found = answer_and_run(rid, update_id)
    return found is None or found[0].answered


def outcome(row: UpdateRow) -> Any:
    """An answered update's reply; UpdateRejected with its reason if it was rejected."""
    if row.status == UpdateStatus.REJECTED:
        raise UpdateRejected(row.reason or f"update {row.id!r} rejected")
    return row.reply


def get_update(run_id: uuid.UUID | str, update_id: str, wait: float | None = None) -> UpdateInfo:
    """The run's update `update_id` as it stands: `.id`, `.name`, `.payload`, `.status`
    (pending, replied, rejected), `.reply`, `.reason`. With `wait` (seconds), waits up to that
    long for its answer first. Raises RunNotFound or UpdateNotFound."""
    rid = as_run_id(run_id)
    uid = check_update_id(update_id)
    _state(rid)
    found = answer_and_run(rid, uid)
    if found is None:
        raise UpdateNotFound(f"run {rid} has no update {uid!r}")
    row = found[0]
    if wait is not None and not row.answered:
        try:
            row = wait_for_answer(rid, uid, as_timeout(wait))
        except (TimeoutError, RunFailed, RunCancelled, RunFinished):
            row = found[0]
    return UpdateInfo(row.id, row.name, row.payload, row.status, row.reply, row.reason)


def _state(rid: uuid.UUID) -> RunState:
    state = run_state(rid)
    if state is None:
        raise RunNotFound(f"no run {rid}")
    return state


def _workflow_of(state: RunState) -> WorkflowFunction[..., Any]:
    wf = registry.workflows.get(state.workflow)
    if wf is None:  # not imported here: nothing says which updates it takes
        raise UnknownUpdate(f"workflow {state.workflow!r} is not registered in this process")
    return wf


def as_timeout(timeout: object) -> float | None:
    """A timeout in seconds (or None); InvalidArguments if not."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout >= 0:
        raise InvalidArguments("timeout must be a non-negative number of seconds or None")
    return float(timeout)


def _ended_without_answer(rid: uuid.UUID, update_id: str, state: RunState) -> Exception:
    said = f"run {rid} ended without answering update {update_id!r}"
    if state.status == RunStatus.FAILED:
        error = state.error or {}
        kind, message = error.get("type", "Error"), error.get("message", "")
        return RunFailed(f"{said}: it failed: {kind}: {message}", error)
    if state.status == RunStatus.CANCELLED:
        return RunCancelled(f"{said}: it was cancelled")
    return RunFinished(f"{said}: it completed")
