"""Run ends committed together: the runs of one batch message (runtime.worker.run_batch)
settle without waiting, each, for their own durable commit.

Inside `together()`, a run that completes or fails queues its end (its step's result, its
`run_completed` or `run_failed` event, the lease given back) with the process's checkpoint
writer and goes on to the next run; the writer's thread commits what is queued in groups
while the next runs execute. The block's end waits until every end is committed (durably,
as every checkpoint commit is), and only then does what follows an end: waking this
process's waiters of the run, freeing its concurrency slot. The batch's message is
acknowledged after that, so a crash before it leaves the runs whose ends were not committed
claimed until their leases expire, then sent again by the run sweep (their steps run again,
as a step whose worker dies before its result commits always does).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from runtime.core.control import Abort
from runtime.durable.session import ExecutionSession

OnFailure = Callable[[ExecutionSession, Exception], object]


@dataclass
class RunEnds:
    """The ends queued in one block, and what follows each once it is committed."""

    sessions: list[ExecutionSession] = field(default_factory=list)
    then: dict[uuid.UUID, list[Callable[[], object]]] = field(default_factory=dict)

    def queued(self, session: ExecutionSession, then: Callable[[], object]) -> None:
        """`session`'s run end is queued; `then()` once it is committed."""
        self.sessions.append(session)
        self.then.setdefault(session.run_id, []).append(then)

    def after(self, run_id: uuid.UUID, then: Callable[[], object]) -> None:
        """`then()` once the queued end of `run_id` is committed."""
        self.then.setdefault(run_id, []).append(then)

    def settle(self, on_failure: OnFailure) -> None:
        """Wait for every queued end; run what follows the committed ones, hand the session
        of each failed one to `on_failure` (which may raise: the first such error is raised
        once every end was waited for)."""
        first: Exception | None = None
        for session in self.sessions:
            try:
                session.barrier()
            except Abort as abort:
                try:
                    on_failure(session, abort.failure)
                except Exception as exc:
                    first = first or exc
                continue
            for then in self.then.pop(session.run_id, []):
                then()
        self.sessions.clear()
        if first is not None:
            raise first


_current: ContextVar[RunEnds | None] = ContextVar("fanfold_run_ends", default=None)


def current() -> RunEnds | None:
    """The ends of the enclosing `together()` block, or None (each end waits for itself)."""
    return _current.get()


@contextmanager
def together(on_failure: OnFailure) -> Iterator[RunEnds]:
    """Runs that end inside the block queue their ends; the block's end waits for them all
    (and raises what `on_failure` raised for one that failed)."""
    ends = RunEnds()
    token = _current.set(ends)
    try:
        yield ends
    finally:
        _current.reset(token)
        ends.settle(on_failure)
