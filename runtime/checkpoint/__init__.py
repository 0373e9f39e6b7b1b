"""The checkpoint store's pure core: group commit of checkpoints from many threads to a sink.

- `batching`: what is queued (checkpoints, their envelopes and waiters) and the batch limits.
- `intake`: the queue, and whose turn it is to write the next batch.
- `writer`: the per-process writer (`write` blocks until committed, `submit` queues) and its
  thread.
- `commit`: one batch's commit, its callers resolved, and a failure kept to the sessions it hit.
- `poisoned`: the sessions a failed write poisoned, and by what.
- `held_signals`: signal handlers held back while the main thread writes a batch itself.
- `sink`: the port batches are written through (`Sink`) and the writer's counters;
  `memory`: an in-memory sink for tests; `errors`: what the writer's callers may get.

Nothing here imports Django: the database sink is runtime.store.history.sink, and runtime.store
builds this process's writer over it.
"""

from __future__ import annotations

from runtime.checkpoint.batching import (
    DEFAULT_LIMITS,
    BatchLimits,
    Checkpoint,
    Envelope,
    EnvelopeKind,
    Waiter,
)
from runtime.checkpoint.errors import CheckpointFailed, WriterClosed
from runtime.checkpoint.intake import Intake
from runtime.checkpoint.memory import MemorySink
from runtime.checkpoint.sink import Sink, WriterStats
from runtime.checkpoint.writer import CheckpointWriter

__all__ = [
    "DEFAULT_LIMITS",
    "BatchLimits",
    "Checkpoint",
    "CheckpointFailed",
    "CheckpointWriter",
    "Envelope",
    "EnvelopeKind",
    "Intake",
    "MemorySink",
    "Sink",
    "Waiter",
    "WriterClosed",
    "WriterStats",
]
