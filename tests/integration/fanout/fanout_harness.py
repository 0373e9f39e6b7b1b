"""The in-process stand-ins for workers and the broker used by the fan-out integration tests."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from django.db import connection

from publisher.fake import FakeTransport
from publisher.messages import Message
from runtime.core.branch_dispatch import summary_counts
from runtime.core.branches import BranchAttempt
from runtime.fanout.chunk import run_message
from tests.support.dispatch import Later


class Branches:
    """Delivers published branch messages to run_message (one branch or a chunk of them), like a
    pool of workers would."""

    def __init__(self, fake: FakeTransport, later: Later) -> None:
        self.fake = fake
        self.later = later
        self.delivered = 0
        self.outcomes: list[str] = []

    def tally(self) -> Counter[str]:
        """What the delivered messages did, per branch: "completed:7,skipped:3" (a chunk's)
        counts 7 and 3, "skipped" (a single branch's) counts 1."""
        return sum(map(summary_counts, self.outcomes), Counter())

    def pending(self) -> list[Message]:
        return self.fake.delivered[self.delivered :]

    def deliver(self, messages: Sequence[Message], threads: int = 8, times: int = 1) -> None:
        work = [m for m in messages for _ in range(times)]

        def one(message: Message) -> str:
            try:
                run_id, position, attempt, group_position, *poll = message.args
                priority = message.kwargs.get("priority", 0)  # as the task takes it
                branch = BranchAttempt(
                    uuid.UUID(run_id), position, attempt, group_position, priority
                )
                return run_message(branch, message.kwargs.get("count", 1), *poll)
            finally:
                connection.close()

        with ThreadPoolExecutor(max_workers=threads) as pool:
            self.outcomes.extend(pool.map(one, work))

    def drain(self, threads: int = 8, times: int = 1) -> None:
        """Deliver every published message (and what their completions publish) until none."""
        while self.pending():
            batch = self.pending()
            self.delivered += len(batch)
            self.deliver(batch, threads, times)

    def deliver_later(self, threads: int = 8) -> None:
        """Deliver the delayed publishes recorded so far (ignoring their countdown)."""
        calls, self.later.calls[:] = list(self.later.calls), []
        messages = [
            Message("fanfold.run_branch", f"later-{i}", args=[str(r), p, a, g, poll])
            for i, (r, g, p, a, _, poll) in enumerate(calls)
        ]
        self.deliver(messages, threads)
