"""The checkpoint store's pure core: group commit of checkpoints from many threads to a sink.

`batching` (checkpoints, envelopes, batch limits), `intake` (the queue and whose turn it is to
write), `writer` (the per-process writer and its thread), `commit` (one batch's commit and the
sessions a failure poisons), `held_signals`, `poisoned`, `errors`, and `memory` (an in-memory
sink for tests). Nothing here imports Django: the database sink is runtime.store.sink, and
runtime.store builds this process's writer over it.
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
