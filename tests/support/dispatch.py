"""A dispatcher for integration tests: runs are recorded, branches published to a fake.

Branch messages go through the real dispatch path (messages, batches, per-message outcomes)
into the publisher's `FakeTransport`; run enqueues and delayed branch publishes (retries,
child polls) are recorded instead of reaching a broker.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from celery import current_app

from publisher.fake import FakeTransport
from publisher.transport import Transport
from runtime.core.branch_dispatch import BranchDispatch
from runtime.core.versions import version_queue
from runtime.dispatch import CeleryDispatcher
from runtime.registry import versions


@dataclass
class Enqueued:
    calls: list[tuple[uuid.UUID, float | None]] = field(default_factory=list)
    priorities: list[int] = field(default_factory=list)  # of each call, in order
    queues: list[str | None] = field(default_factory=list)  # of each call: a warm queue or None

    def __call__(
        self,
        run_id: uuid.UUID,
        countdown: float | None = None,
        priority: int = 0,
        queue: str | None = None,
    ) -> None:
        self.calls.append((run_id, countdown))
        self.priorities.append(priority)
        self.queues.append(queue)

    def count(self, run_id: uuid.UUID) -> int:
        return sum(1 for rid, _ in self.calls if rid == run_id)


@dataclass
class Later:
    """Delayed publishes: (run_id, group_position, position, attempt, countdown, poll)."""

    calls: list[tuple[uuid.UUID, int, int, int, float, int]] = field(default_factory=list)
    priorities: list[int] = field(default_factory=list)  # of each call, in order

    def __call__(
        self,
        run_id: uuid.UUID,
        group_position: int,
        position: int,
        attempt: int,
        countdown: float,
        poll: int = 0,
        priority: int = 0,
    ) -> None:
        self.calls.append((run_id, group_position, position, attempt, countdown, poll))
        self.priorities.append(priority)


class RecordingDispatcher(CeleryDispatcher):
    """Records enqueues (those sent in the background too) and delayed publishes; branches
    due now go to `transport` (a fake)."""

    def __init__(self, transport: Transport | None = None) -> None:
        self.transport = transport or FakeTransport()
        super().__init__(transport=self.transport)
        self.enqueued = Enqueued()
        self.later = Later()
        self.depth: int | None = None

    def enqueue_run(
        self,
        run_id: uuid.UUID,
        countdown: float | None = None,
        priority: int = 0,
        queue: str | None = None,
    ) -> None:
        self.enqueued(run_id, countdown, priority, queue)

    def enqueue_run_soon(
        self,
        run_id: uuid.UUID,
        priority: int = 0,
        queue: str | None = None,
        stream: bool = False,
    ) -> None:
        self.enqueued(run_id, None, priority, queue)  # recorded as sent at once

    def queue_depth(self, queue: str | None = None) -> int | None:
        """`depth` (None, unknown, unless a test sets it) on the queue this process publishes
        to, its own version's; the other versions' queues are empty."""
        if self.depth is None or queue is None:
            return self.depth
        own = version_queue(current_app.conf.task_default_queue, versions.current())
        return self.depth if queue == own else 0

    def publish_branches(
        self,
        run_id: uuid.UUID,
        group_position: int,
        dispatches: Sequence[BranchDispatch],
        priority: int = 0,
    ) -> None:
        super().publish_branches(
            run_id, group_position, [d for d in dispatches if d.countdown <= 0], priority
        )
        for d in dispatches:
            if d.countdown > 0:
                self.later(
                    run_id, group_position, d.position, d.attempt, d.countdown, d.poll, priority
                )


class LossyDispatcher(CeleryDispatcher):
    """The real background publish, into a fake broker (`broker`, whose requests a test may
    fail); what the run sweep (or any direct enqueue) sends is recorded in `resent`."""

    def __init__(self) -> None:
        self.broker = FakeTransport()
        super().__init__(transport=self.broker)
        self.resent: list[uuid.UUID] = []

    def enqueue_run(
        self,
        run_id: uuid.UUID,
        countdown: float | None = None,
        priority: int = 0,
        queue: str | None = None,
    ) -> None:
        self.resent.append(run_id)

    def queue_depth(self, queue: str | None = None) -> int | None:
        return 0
