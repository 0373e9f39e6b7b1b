"""Mailboxes: `send` puts a message in a run's mailbox; `ctx.recv` takes the oldest one.

A message is committed with a wake-up of its run, so a run suspended in `ctx.recv` resumes
after the commit. A `ctx.recv` marks the message it takes with its position before it records
it: if the run loses its lease in between, the next execution finds the same message again.
"""

from __future__ import annotations

import uuid
from typing import Any

from runtime import conf
from runtime.core.errors import InvalidArguments
from runtime.core.identity import as_run_id, check_idempotency_key, check_name
from runtime.core.jsonvalues import checked
from runtime.messaging.wake import enqueue_woken
from runtime.store.messaging.messages import SentMessage, insert_message


def check_topic(topic: object) -> str:
    """A topic as a mailbox stores it; InvalidArguments if not."""
    try:
        return check_name(topic, "topic")
    except ValueError as exc:
        raise InvalidArguments(str(exc)) from None


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
    return insert_message(
        as_run_id(run_id),
        topic,
        value,
        idempotency_key=idempotency_key,
        source=source,
        by=by,
        enqueue=enqueue_woken,
    )
