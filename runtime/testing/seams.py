"""Test seams for Fanfold's own tests and for users testing their workflows.

- `use_dispatcher(d)`: send every message of this process to `d` for a block.
- `InMemoryDispatcher`: keeps what the runtime sends; `join()` runs it in this process (run
  executions and branch attempts, delayed ones when they are due, highest run priority first
  as a broker with priorities would) until nothing is left, the way dramatiq's StubBroker is
  joined. No broker, no worker.
- `use_writer(sink=...)`: a fresh checkpoint writer for a block, closed (with its database
  connection) after it; `sink` builds its sink (a `DatabaseSink` by default).
- `callback_token(run_id, name=None)`: the token of a run's callback, as the workflow's
  `.token` has it (only its digest is stored), for posting to it in a test.
- `replay(run_id)`: the replay check of one recorded run against the current code, writing
  nothing (runtime.replay_check); `.ok`, or `.mismatch` says where and why.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from runtime import conf, dispatch, executor, store
from runtime.checkpoint.batching import Checkpoint
from runtime.checkpoint.sink import Sink
from runtime.checkpoint.writer import CheckpointWriter
from runtime.core.branch_dispatch import BranchDispatch
from runtime.core.branches import BranchAttempt
from runtime.core.callbacks import recover_token
from runtime.fanout import async_branches, chunk
from runtime.process.local import ProcessLocal
from runtime.replay_check import Mismatch, ReplayReport, replay
from runtime.selectors import callback_step
from runtime.store.history.sink import DatabaseSink

__all__ = [
    "InMemoryDispatcher",
    "Mismatch",
    "ReplayReport",
    "SentBranch",
    "SentRun",
    "replay",
    "use_dispatcher",
    "use_writer",
]


@contextmanager
def use_dispatcher(dispatcher: dispatch.Dispatcher) -> Iterator[dispatch.Dispatcher]:
    """Make `dispatcher` the process's dispatcher inside the block."""
    previous = dispatch.install(dispatcher)
    try:
        yield dispatcher
    finally:
        dispatch.install(previous)


class InlineWriter(CheckpointWriter):
    """A checkpoint writer that commits every checkpoint on its caller's thread before it
    returns, an asynchronous one too: for one thread of work (the test kit), where a write
    in flight beside the caller's next read only costs a thread's hand-off, and on SQLite's
    shared in-memory test database fails that read (`database table is locked`)."""

    def submit(self, cp: Checkpoint) -> None:
        self.write(cp)


@contextmanager
def use_writer(
    sink: Callable[[], Sink] = DatabaseSink,
    async_window: float | None = None,
    *,
    inline: bool = False,
) -> Iterator[ProcessLocal[CheckpointWriter]]:
    """A fresh process checkpoint writer over `sink()` inside the block, closed after it
    (`async_window`: its async batching window in seconds, if not the configured one;
    `inline`: an `InlineWriter`, asynchronous checkpoints committed before `submit` returns)."""

    kind = InlineWriter if inline else CheckpointWriter
    local: ProcessLocal[CheckpointWriter] = ProcessLocal(
        lambda: store.new_writer(sink, async_window, kind)
    )
    previous = store.install_writer(local)
    try:
        yield local
    finally:
        store.install_writer(previous)
        local.get().close(timeout=10)  # drains, then closes the sink's connection


@dataclass(frozen=True)
class SentRun:
    """An `enqueue_run` the in-memory dispatcher kept."""

    run_id: uuid.UUID
    countdown: float | None
    due: float  # time.monotonic() when it may run
    priority: int = 0
    queue: str | None = None  # a worker node's warm queue it was sent to (runtime.warm.routing)


@dataclass(frozen=True)
class SentBranch:
    """A branch attempt the in-memory dispatcher kept."""

    run_id: uuid.UUID
    group_position: int
    dispatch: BranchDispatch
    due: float  # time.monotonic() when it may run
    priority: int = 0


@dataclass
class InMemoryDispatcher:
    """Keeps every message in order; `join()` delivers them in this process."""

    runs: list[SentRun] = field(default_factory=list)
    branches: list[SentBranch] = field(default_factory=list)
    _queue: list[SentRun | SentBranch] = field(default_factory=list, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def enqueue_run(
        self,
        run_id: uuid.UUID,
        countdown: float | None = None,
        priority: int = 0,
        queue: str | None = None,
    ) -> None:
        due = time.monotonic() + (countdown or 0.0)
        sent = SentRun(run_id, countdown, due, priority, queue)  # run here, whatever the queue
        with self._lock:
            self.runs.append(sent)
            self._queue.append(sent)

    def publish_branches(
        self,
        run_id: uuid.UUID,
        group_position: int,
        dispatches: Sequence[BranchDispatch],
        priority: int = 0,
    ) -> None:
        now = time.monotonic()
        sent = [
            SentBranch(run_id, group_position, d, now + max(d.countdown, 0.0), priority)
            for d in dispatches
        ]
        with self._lock:
            self.branches.extend(sent)
            self._queue.extend(sent)

    def queue_depth(self, queue: str | None = None) -> int | None:
        with self._lock:
            return len(self._queue)

    def join(self, timeout: float = 30.0) -> int:
        """Deliver kept messages until none is left; returns how many were delivered.

        Delayed messages are delivered when due (this waits for them). Raises TimeoutError
        if messages are still left after `timeout` seconds.
        """
        deadline = time.monotonic() + timeout
        delivered = 0
        while True:
            message = self._take_due()
            if message is None:
                if not async_branches.drain(max(deadline - time.monotonic(), 0.0)):
                    raise TimeoutError(f"async branch bodies still running after {timeout} s")
                with self._lock:
                    if not self._queue:
                        return delivered
                    wait = min(m.due for m in self._queue) - time.monotonic()
                if time.monotonic() + max(wait, 0.0) > deadline:
                    raise TimeoutError(f"messages still queued after {timeout} s")
                time.sleep(min(max(wait, 0.0), 0.05))
                continue
            delivered += 1
            if isinstance(message, SentRun):
                executor.execute(message.run_id)
            else:
                d = message.dispatch
                attempt = BranchAttempt(
                    message.run_id, d.position, d.attempt, message.group_position, message.priority
                )
                chunk.run_message(attempt, d.count, d.poll)

    def _take_due(self) -> SentRun | SentBranch | None:
        now = time.monotonic()
        with self._lock:
            due = [i for i, message in enumerate(self._queue) if message.due <= now]
            if not due:
                return None
            # Highest priority first, then in the order sent.
            first = min(due, key=lambda i: (-self._queue[i].priority, i))
            return self._queue.pop(first)


def callback_token(run_id: uuid.UUID | str, name: str | None = None) -> str:
    """The token of run `run_id`'s callback (the one named `name`, if it has several), as
    the workflow's `.token` has it; LookupError if it cannot be recomputed."""
    row = callback_step(run_id, name)
    token = recover_token(conf.token_secrets(), row.run_id, row.id, row.callback_token or "")
    if token is None:
        raise LookupError(f"the token of callback {row.name!r} of run {run_id} is not derivable")
    return token
