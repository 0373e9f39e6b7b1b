"""Publishing fan-out branches: one Celery task message per branch attempt, sent in batches.

A branch message is `fanfold.run_branch(run_id, position, attempt, group_first)` with the
derived key `dispatch_key(run, position, attempt)` as its task id, so a republish of the same
attempt is recognisably the same message and loses its claim if the first one ran.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from functools import lru_cache

from publisher import CeleryTransport, Message, publish_messages
from publisher.messages import IDEMPOTENCY_HEADER
from runtime import conf, embedded
from runtime.core.fanin import Dispatch
from runtime.core.identity import dispatch_key

BRANCH_TASK = "fanfold.run_branch"


def branch_message(run_id: uuid.UUID, group_first: int, position: int, attempt: int) -> Message:
    """The task message of one attempt of one branch."""
    return Message(
        BRANCH_TASK,
        dispatch_key(run_id, position, attempt),
        args=[str(run_id), position, attempt, group_first],
    )


@lru_cache(maxsize=1)
def _transport(batch_size: int) -> CeleryTransport:
    from config.celery import app

    return CeleryTransport(app, batch_size=batch_size)


def publish_branches(run_id: uuid.UUID, group_first: int, dispatches: Sequence[Dispatch]) -> None:
    """Publish these branch attempts: those due now in batches, delayed ones one by one.

    Raises `publisher.PublishError` if any message failed; its `retryable` says whether trying
    again may help.
    """
    if not dispatches:
        return
    embedded.ensure_worker()
    from runtime.fanout_sweep import start_fanout_sweeper

    start_fanout_sweeper()
    now = [d for d in dispatches if d.countdown <= 0]
    if now:
        batch_size = conf.get().PUBLISH_BATCH_SIZE
        messages = [branch_message(run_id, group_first, d.position, d.attempt) for d in now]
        publish_messages(messages, _transport(batch_size), batch_size=batch_size)
    for d in dispatches:
        if d.countdown > 0:
            publish_later(run_id, group_first, d.position, d.attempt, d.countdown)


def publish_later(
    run_id: uuid.UUID,
    group_first: int,
    position: int,
    attempt: int,
    countdown: float,
    poll: int = 0,
) -> None:
    """Publish one branch attempt after `countdown` seconds (a retry, or a child's next poll).

    The publisher's messages carry no ETA, so a delayed message goes through Celery directly.
    """
    from runtime.tasks import run_branch

    embedded.ensure_worker()
    key = dispatch_key(run_id, position, attempt)
    run_branch.apply_async(
        (str(run_id), position, attempt, group_first, poll),
        task_id=f"{key}:poll:{poll}" if poll else key,
        countdown=max(countdown, 0.0),
        headers={IDEMPOTENCY_HEADER: key},
    )
