"""Updates of a run: accepted under the run's row lock (so a run cannot finish between the
check and the commit), found again by their id, taken by the `ctx.next_update` at a position
once, and answered once (the first answer stays)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, connection, transaction

from runtime.core.clock import current_time
from runtime.core.errors import RunFinished, RunNotFound
from runtime.models import FINISHED_RUN_STATES, Run, RunStatus, RunUpdate, UpdateStatus
from runtime.store.dialect import postgres
from runtime.store.history.payload_forms import StoredForms
from runtime.store.messaging.streams import notify_run
from runtime.store.messaging.update_statements import (
    accept_update_pg,
    answer_and_run_pg,
    answer_update_pg,
    run_state_pg,
    take_update_pg,
)
from runtime.store.messaging.wakes import Enqueue, wake_runs_txn

_FIELDS = ("update_id", "name", "payload", "status", "reply", "reason", "sent_by")


@dataclass(frozen=True)
class UpdateRow:
    """One update as stored: what was asked and how it was answered so far."""

    id: str
    name: str
    payload: Any
    status: str
    reply: Any = None
    reason: str | None = None
    by: dict[str, Any] | None = None

    @property
    def answered(self) -> bool:
        return self.status != UpdateStatus.PENDING


@dataclass(frozen=True)
class RunState:
    """What a caller of an update needs of its run: its workflow, status and error."""

    workflow: str
    status: str
    error: dict[str, Any] | None

    @property
    def finished(self) -> bool:
        return self.status in FINISHED_RUN_STATES


def run_state(rid: uuid.UUID) -> RunState | None:
    """The run's workflow, status and error, or None for no such run (prepared on
    PostgreSQL: a caller reads it for every update it sends)."""
    if postgres():
        row = run_state_pg(rid)
        return None if row is None else RunState(*row)
    row = Run.objects.filter(id=rid).values_list("workflow", "status", "error").first()
    return None if row is None else RunState(*row)


def answer_and_run(rid: uuid.UUID, update_id: str) -> tuple[UpdateRow, RunState] | None:
    """The update and its run in one read (one snapshot: an answer committed before the run
    finished is seen with it), or None for no such update."""
    if postgres():
        row = answer_and_run_pg(rid, update_id)
    else:
        fields = (*_FIELDS, "run__workflow", "run__status", "run__error")
        found = RunUpdate.objects.filter(run_id=rid, update_id=update_id)
        row = found.values_list(*fields).first()
    if row is None:
        return None
    return UpdateRow(*row[: len(_FIELDS)]), RunState(*row[len(_FIELDS) :])


def find_update(rid: uuid.UUID, update_id: str) -> UpdateRow | None:
    """The run's update `update_id` as committed now, or None."""
    row = RunUpdate.objects.filter(run_id=rid, update_id=update_id).values_list(*_FIELDS).first()
    return None if row is None else UpdateRow(*row)


def insert_update(
    rid: uuid.UUID,
    update_id: str,
    name: str,
    payload: Any,
    *,
    by: dict[str, Any] | None,
    enqueue: Enqueue,
    flush: bool = True,
) -> tuple[UpdateRow, bool]:
    """Accept update `update_id` for run `rid` and wake the run (`enqueue(run_id, priority,
    warm_queue)` after commit); (the update, True), or (the earlier one, False) for a repeated
    id. Raises RunNotFound or RunFinished (a new update to a finished run), writing nothing.
    `flush` False: on PostgreSQL the commit does not wait for the WAL flush."""
    if postgres() and not connection.in_atomic_block:
        return _insert_update_pg(rid, update_id, name, payload, by, enqueue, flush)
    with transaction.atomic():
        # Locked: a run cannot finish between this check and the update's commit.
        status = (
            Run.objects.select_for_update().filter(id=rid).values_list("status", flat=True).first()
        )
        if status is None:
            raise RunNotFound(f"no run {rid}")
        if status in FINISHED_RUN_STATES:
            earlier = find_update(rid, update_id)
            if earlier is not None:  # applied once, even once the run finished
                return earlier, False
            raise RunFinished(f"run {rid} has finished ({status}): it takes no updates")
        now = current_time()
        stored = StoredForms().form(payload, rid)  # encrypted or offloaded like every payload
        update = RunUpdate(run_id=rid, update_id=update_id, name=name, payload=stored,
                           sent_by=by, created_at=now)  # fmt: skip
        try:
            with transaction.atomic():
                update.save(force_insert=True)
        except IntegrityError:  # a repeated id: applied once
            again = find_update(rid, update_id)
            if again is None:
                raise
            return again, False
        wake_runs_txn([rid], now, enqueue)
        notify_run(rid)
    return UpdateRow(update_id, name, payload, UpdateStatus.PENDING, by=by), True


def _insert_update_pg(
    rid: uuid.UUID,
    update_id: str,
    name: str,
    payload: Any,
    by: dict[str, Any] | None,
    enqueue: Enqueue,
    flush: bool,
) -> tuple[UpdateRow, bool]:
    """`insert_update` in one statement (runtime.store.messaging.update_statements)."""
    found = accept_update_pg(rid, update_id, name, payload, by, current_time(), flush)
    if found is None:
        raise RunNotFound(f"no run {rid}")
    status, priority, inserted, warm_queue = found
    if not inserted:  # a repeated id (applied once, even once the run finished), or finished
        earlier = find_update(rid, update_id)
        if earlier is not None:
            return earlier, False
        if status in FINISHED_RUN_STATES:
            raise RunFinished(f"run {rid} has finished ({status}): it takes no updates")
        raise IntegrityError(f"update {update_id!r} of run {rid} conflicted but is not found")
    if status == RunStatus.WAITING:  # a running or pending run finds it by itself
        enqueue(rid, priority, warm_queue)
    return UpdateRow(update_id, name, payload, UpdateStatus.PENDING, by=by), True


def take_update(rid: uuid.UUID, names: Sequence[str], position: int) -> UpdateRow | None:
    """The update the `ctx.next_update` at `position` takes: the one it took before, else the
    oldest untaken one with one of `names` (any name when empty), marked as its own."""
    now = current_time()
    if postgres() and not connection.in_atomic_block:
        row = take_update_pg(rid, names, position, now)
        return None if row is None else UpdateRow(*row)
    with transaction.atomic():
        taken = RunUpdate.objects.filter(run_id=rid, received_position=position)
        found = taken.values_list(*_FIELDS).first()
        if found is None:
            waiting = RunUpdate.objects.select_for_update().filter(
                run_id=rid, received_position__isnull=True
            )
            if names:
                waiting = waiting.filter(name__in=list(names))
            oldest = waiting.order_by("id").values_list("id", *_FIELDS).first()
            if oldest is None:
                return None
            RunUpdate.objects.filter(id=oldest[0], run_id=rid).update(
                received_position=position, received_at=now
            )
            found = oldest[1:]
    return UpdateRow(*found)


def answer_update(
    rid: uuid.UUID, update_id: str, status: str, reply: Any, reason: str | None, position: int
) -> UpdateRow:
    """Record the answer of update `update_id` unless it has one (a replay after a crash, or a
    zombie executor, finds the first answer), and notify the run's listeners with its commit
    (PostgreSQL); returns the update as answered."""
    now = current_time()
    if postgres() and not connection.in_atomic_block:
        done = answer_update_pg(rid, update_id, status, reply, reason, position, now)
    else:
        stored = StoredForms().form(reply, rid) if status == UpdateStatus.REPLIED else None
        pending = RunUpdate.objects.filter(
            run_id=rid, update_id=update_id, status=UpdateStatus.PENDING
        )
        done = (
            pending.update(
                status=status,
                reply=stored,
                reason=reason,
                answered_position=position,
                answered_at=now,
            )
            > 0
        )
        if done:
            notify_run(rid)
    if done:  # the first answer: this one
        return UpdateRow(update_id, "", None, status, reply, reason)
    found = find_update(rid, update_id)
    if found is None:
        raise RunNotFound(f"run {rid} has no update {update_id!r}")
    return found
