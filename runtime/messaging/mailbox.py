"""Mailboxes: `send` puts a message in a run's mailbox; `ctx.recv` takes the oldest one.

A message is committed with a wake-up of its run, so a run suspended in `ctx.recv` resumes
after the commit. A `ctx.recv` marks the message it takes with its position before it records
it: if the run loses its lease in between, the next execution finds the same message again.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from runtime import conf
from runtime.core.errors import InvalidArguments, RunFinished, RunNotFound
from runtime.core.identity import check_idempotency_key, check_name
from runtime.core.jsonvalues import checked
from runtime.messaging.wake import wake_runs_txn
from runtime.models import FINISHED_RUN_STATES, Message, Run
from runtime.store.payload_forms import StoredForms


@dataclass(frozen=True)
class SentMessage:
    """What a send did: the message's id, and False when an earlier send already made it."""

    id: int
    created: bool


def check_topic(topic: object) -> str:
    """A topic as a mailbox stores it; InvalidArguments if not."""
    try:
        return check_name(topic, "topic")
    except ValueError as exc:
        raise InvalidArguments(str(exc)) from None


def as_run_id(run_id: object) -> uuid.UUID:
    """`run_id` as a UUID; RunNotFound if it cannot be one."""
    if isinstance(run_id, uuid.UUID):
        return run_id
    try:
        return uuid.UUID(str(run_id))
    except ValueError:
        raise RunNotFound(f"{str(run_id)[:80]!r} is not a run id") from None


def send_message(
    run_id: uuid.UUID | str,
    topic: str,
    value: Any,
    *,
    idempotency_key: str | None = None,
    source: tuple[uuid.UUID, int] | None = None,
    by: dict[str, Any] | None = None,
) -> SentMessage:
    """Put `value` in the mailbox of `run_id` under `topic` and wake the run after commit.

    Raises RunNotFound, RunFinished, InvalidArguments (topic, key), PayloadError or
    PayloadTooLarge; nothing is written then. A repeated `idempotency_key` (or `source`, the
    sending run and position of a send from workflow code) returns the first message. `by`
    (who sent it through the API) is recorded in the run's `message_received`.
    """
    topic = check_topic(topic)
    if idempotency_key is not None:
        try:
            check_idempotency_key(idempotency_key)
        except ValueError as exc:
            raise InvalidArguments(str(exc)) from None
    value, _ = checked(value, f"message on {topic!r}", conf.get().MAX_PAYLOAD_BYTES)
    rid = as_run_id(run_id)
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
        now = timezone.now()
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
        wake_runs_txn([rid], now)
    return SentMessage(message.id, created=True)


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


@dataclass(frozen=True)
class Received:
    """A message a `ctx.recv` took."""

    id: int
    value: Any
    by: dict[str, Any] | None = None


def take_message(run_id: uuid.UUID, topic: str, position: int) -> Received | None:
    """The message the `ctx.recv` at `position` takes: the one it took before, else the oldest
    unreceived one on `topic` (marked as its own), else None."""
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
                received_position=position, received_at=timezone.now()
            )
            found = oldest
    return Received(found[0], found[1], found[2])
