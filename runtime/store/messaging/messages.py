"""A run's mailbox: messages inserted under the run's row lock (so a run cannot finish between
the check and the commit), found again by idempotency key or sending position, and taken by
the `ctx.recv` at a position once."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, connection, transaction

from runtime.core.clock import current_time
from runtime.core.errors import RunFinished, RunNotFound
from runtime.models import FINISHED_RUN_STATES, Message, Run, RunStatus
from runtime.store.dialect import postgres
from runtime.store.history.payload_forms import StoredForms
from runtime.store.messaging.message_statements import send_pg, take_pg
from runtime.store.messaging.wakes import Enqueue, wake_runs_txn


@dataclass(frozen=True)
class SentMessage:
    """What a send did: the message's id, and False when an earlier send already made it."""

    id: int
    created: bool


@dataclass(frozen=True)
class Received:
    """A message a `ctx.recv` took."""

    id: int
    value: Any
    by: dict[str, Any] | None = None


def insert_message(
    rid: uuid.UUID,
    topic: str,
    value: Any,
    *,
    idempotency_key: str | None,
    source: tuple[uuid.UUID, int] | None,
    by: dict[str, Any] | None,
    enqueue: Enqueue,
) -> SentMessage:
    """Insert the message into run `rid`'s mailbox and wake the run (`enqueue(run_id,
    priority, warm_queue)` after commit); the earlier message for a repeated key or source. Raises
    RunNotFound or RunFinished, writing nothing."""
    if idempotency_key is None and source is None and postgres() and not connection.in_atomic_block:
        return _insert_message_pg(rid, topic, value, by, enqueue)
    with transaction.atomic():
        # Locked: a run cannot finish between this check and the message's commit.
        status = (
            Run.objects.select_for_update().filter(id=rid).values_list("status", flat=True).first()
        )
        if status is None:
            raise RunNotFound(f"no run {rid}")
        earlier = _earlier(rid, idempotency_key, source)
        if earlier is not None:  # a repeated send is a no-op, even once the run finished
            return SentMessage(earlier, created=False)
        if status in FINISHED_RUN_STATES:
            raise RunFinished(f"run {rid} has finished ({status}): it takes no messages")
        now = current_time()
        stored = StoredForms().form(value, rid)  # encrypted or offloaded like every payload
        message = Message(run_id=rid, topic=topic, value=stored, created_at=now,
                          idempotency_key=idempotency_key,
                          source_run=source[0] if source else None,
                          source_position=source[1] if source else None,
                          sent_by=by)  # fmt: skip
        try:
            with transaction.atomic():
                message.save(force_insert=True)
        except IntegrityError:
            again = _earlier(rid, idempotency_key, source)
            if again is None:
                raise
            return SentMessage(again, created=False)
        wake_runs_txn([rid], now, enqueue)
    return SentMessage(message.id, created=True)


def _insert_message_pg(
    rid: uuid.UUID,
    topic: str,
    value: Any,
    by: dict[str, Any] | None,
    enqueue: Enqueue,
) -> SentMessage:
    """`insert_message` of a plain send in one statement (message_statements)."""
    found = send_pg(rid, topic, value, by, current_time())
    if found is None:
        raise RunNotFound(f"no run {rid}")
    status, priority, message_id, warm_queue = found
    if message_id is None:
        raise RunFinished(f"run {rid} has finished ({status}): it takes no messages")
    if status == RunStatus.WAITING:  # a running or pending run finds it by itself
        enqueue(rid, priority, warm_queue)
    return SentMessage(message_id, created=True)


def _earlier(
    run_id: uuid.UUID, idempotency_key: str | None, source: tuple[uuid.UUID, int] | None
) -> int | None:
    if source is not None:
        found = Message.objects.filter(source_run=source[0], source_position=source[1])
    elif idempotency_key is not None:
        found = Message.objects.filter(run_id=run_id, idempotency_key=idempotency_key)
    else:
        return None
    return found.values_list("id", flat=True).first()


def take_message(run_id: uuid.UUID, topic: str, position: int) -> Received | None:
    """The message the `ctx.recv` at `position` takes: the one it took before, else the oldest
    unreceived one on `topic` (marked as its own), else None."""
    if postgres() and not connection.in_atomic_block:
        took = take_pg(run_id, topic, position, current_time())
        return None if took is None else Received(*took)
    with transaction.atomic():
        taken = Message.objects.filter(run_id=run_id, received_position=position)
        found = taken.values_list("id", "value", "sent_by").first()
        if found is None:
            oldest = (
                Message.objects.select_for_update()
                .filter(run_id=run_id, topic=topic, received_position__isnull=True)
                .order_by("id")
                .values_list("id", "value", "sent_by")
                .first()
            )
            if oldest is None:
                return None
            Message.objects.filter(id=oldest[0]).update(
                received_position=position, received_at=current_time()
            )
            found = oldest
    return Received(found[0], found[1], found[2])
