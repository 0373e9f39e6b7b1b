"""The outside world of a test environment: callbacks, heartbeats, messages, signals, updates
and approvals, delivered by the test the way the REST API delivers them. A delivery wakes the
run; it moves when the test next waits on the environment (an update waits for its answer)."""

from __future__ import annotations

import uuid
from typing import Any

from django.core.exceptions import ObjectDoesNotExist

from runtime.agents.approvals import approvals, decide
from runtime.handles import RunHandle
from runtime.messaging.mailbox import send_message
from runtime.messaging.signals import emit
from runtime.services import CallbackReceipt, post_callback
from runtime.store.messaging.approvals import Approval
from runtime.testing.seams import callback_token
from runtime.updates.calling import DEFAULT_TIMEOUT, send_update

_NO_RESULT: Any = object()


class OutsideWorld:
    """The delivering half of `WorkflowEnvironment`."""

    def post_callback(
        self,
        run: RunHandle | uuid.UUID | str,
        name: str | None = None,
        *,
        result: Any = _NO_RESULT,
        error: Any = None,
    ) -> CallbackReceipt:
        """Complete run `run`'s callback `name` (its only open one if None) with `result`, or
        fail it with `error` (`{"type", "message"}`), as a POST to its URL does."""
        token = _token(run, name)
        if error is not None:
            return post_callback(token, error=error)
        if result is _NO_RESULT:
            raise TypeError("post_callback takes result= or error=")
        return post_callback(token, result=result)

    def heartbeat(self, run: RunHandle | uuid.UUID | str, name: str | None = None) -> Any:
        """Post a heartbeat to run `run`'s callback `name`: its heartbeat deadline moves on
        from the environment's now. Returns the callback's new deadline."""
        receipt = post_callback(_token(run, name), heartbeat=True)
        return receipt.deadline

    def send(
        self,
        run: RunHandle | uuid.UUID | str,
        topic: str,
        value: Any,
        idempotency_key: str | None = None,
    ) -> Any:
        """Put `value` in run `run`'s mailbox under `topic` (`runtime.send`)."""
        return send_message(_id(run), topic, value, idempotency_key=idempotency_key)

    def emit_signal(self, name: str, payload: Any, idempotency_key: str | None = None) -> Any:
        """Emit signal `name` to every run waiting for it (`runtime.emit_signal`)."""
        return emit(name, payload, idempotency_key)

    def update(
        self,
        run: RunHandle | uuid.UUID | str,
        name: str,
        payload: Any = None,
        *,
        update_id: str | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> Any:
        """Send update `name` to run `run` and return the run's reply, as `RunHandle.update`
        does (the validator runs first; the same errors). Unlike the other deliveries it waits:
        the environment runs the run (skipping time as `run.wait()` does) until it answers.
        RunBlocked (a TimeoutError) if it cannot answer without the outside world: the update
        stays accepted, and the run takes it when it gets there."""
        return send_update(_id(run), name, payload, update_id=update_id, timeout=timeout)

    def decide_approval(
        self,
        run: RunHandle | uuid.UUID | str,
        approved: bool = True,
        reason: str | None = None,
        approval_id: str | None = None,
    ) -> list[Approval]:
        """Approve (or deny) run `run`'s pending approvals (only `approval_id`, if given), as
        a person does through the API; returns the decided ones. LookupError if none waits."""
        rid = _id(run)
        pending = [a for a in approvals(rid) if a.approved is None]
        if approval_id is not None:
            pending = [a for a in pending if a.id == approval_id]
        if not pending:
            raise LookupError(f"run {rid} has no pending approval to decide")
        return [decide(rid, a.id, approved, reason) for a in pending]


def _token(run: RunHandle | uuid.UUID | str, name: str | None) -> str:
    rid = _id(run)
    try:
        return callback_token(rid, name)
    except ObjectDoesNotExist:
        which = "no callback" if name is None else f"no callback {name!r}"
        raise LookupError(f"run {rid} has {which} (yet): drive it first") from None


def _id(run: RunHandle | uuid.UUID | str) -> uuid.UUID:
    if isinstance(run, RunHandle):
        return run.id
    return run if isinstance(run, uuid.UUID) else uuid.UUID(str(run))
