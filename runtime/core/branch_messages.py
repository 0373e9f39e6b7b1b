"""The task message of a fan-out branch's attempt (the publisher's `Message`). Pure.

A branch message is `fanfold.run_branch(run_id, position, attempt, group_position, poll)` with
the derived key `dispatch_key(run, position, attempt)` as its task id: a republish of the same
attempt is recognisably the same message and loses its claim if the first one ran. A chunk of
a fan-out's first dispatch carries `count` consecutive branches and a key of its own
(`...:nCOUNT`), run one after another (runtime.fanout.chunk). A branch of a run with a
priority carries it as the `priority` keyword: what it sends in turn goes out with it too.
"""

from __future__ import annotations

import uuid

from publisher.messages import Message, Routing
from runtime.core.branch_dispatch import BranchDispatch
from runtime.core.identity import dispatch_key

RUN_BRANCH = "fanfold.run_branch"


def branch_message(
    run_id: uuid.UUID,
    group_position: int,
    d: BranchDispatch,
    priority: int = 0,
    level: int | None = None,
    queue: str | None = None,
) -> Message:
    """The task message of one attempt of one branch (of one poll, for a child branch) of a
    run of `priority`; `level` is the broker's message priority for it (`broker_priority`),
    `queue` its Celery queue (None: the default queue)."""
    key = dispatch_key(run_id, d.position, d.attempt)
    args: list[object] = [str(run_id), d.position, d.attempt, group_position]
    if d.poll:
        key, args = f"{key}:poll:{d.poll}", [*args, d.poll]
    # Priority 0 adds nothing: the message of a plain run stays what it was.
    kwargs: dict[str, object] = {"priority": priority} if priority else {}
    if d.count > 1:  # a chunk (runtime.fanout.chunk): its own key, never its first branch's
        key, kwargs["count"] = f"{key}:n{d.count}", d.count
    routing = Routing(queue=queue, priority=level)
    return Message(RUN_BRANCH, key, args=args, kwargs=kwargs, routing=routing)
