"""One execution of one run: its lease, its checkpoint session and how it writes."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from functools import cached_property

from runtime.checkpoint.batching import Checkpoint
from runtime.checkpoint.errors import CheckpointFailed
from runtime.checkpoint.writer import CheckpointWriter
from runtime.core.control import Abort
from runtime.core.writes import Guard, HistoryWrite, LeaseGuard, Woken


@dataclass(frozen=True)
class ExecutionSession:
    run_id: uuid.UUID
    token: str
    epoch: int
    writer: CheckpointWriter
    priority: int = 0  # the run's: the messages the execution sends carry it

    # Both go into every checkpoint of the execution: built once, not per step.
    @cached_property
    def key(self) -> str:
        return f"{self.run_id}/{self.token}/{self.epoch}"

    @cached_property
    def guard(self) -> Guard:
        return LeaseGuard(self.token)

    def barrier(self) -> None:
        """Wait until everything this session queued is committed (raises Abort if not)."""
        try:
            self.writer.barrier(self.key)
        except CheckpointFailed as failure:
            raise Abort(failure) from failure

    def suspend(self, write: HistoryWrite) -> Woken | None:
        """Commit the run's suspend (`write`, under a SuspendGuard) with everything this
        session queued before it; Woken if a wake-up raced it (the rest committed all the
        same), else None. Raises Abort if the lease was lost or the commit failed."""
        receipt = self.checkpoint(write, sync=True)
        return receipt if isinstance(receipt, Woken) else None

    def checkpoint(self, write: HistoryWrite, *, sync: bool, payload_bytes: int = 0) -> object:
        """Queue (async) or commit (sync) one history write of this session; a committed one's
        receipt (runtime.store.history.sink), None for a queued one.

        `payload_bytes` is the JSON size of the values it records, as measured when they were
        checked; they stand twice in the batch (the row and its event), hence the factor.
        """
        size = 256 * (len(write.events) + len(write.steps)) + 2 * payload_bytes
        cp = Checkpoint(session=self.key, payload=write, size=size, sync=sync)
        try:
            if sync:
                return self.writer.write(cp)
            self.writer.submit(cp)
        except CheckpointFailed as failure:
            raise Abort(failure) from failure
        return None
