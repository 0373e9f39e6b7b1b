"""The checkpoint store's pure core: batch assembly, the writer thread, an in-memory sink.

Nothing here imports Django; the database sink lives in an adapter next to the models.
"""

from __future__ import annotations

from runtime.checkpoint.batching import (
    DEFAULT_LIMITS,
    BatchCollector,
    BatchLimits,
    Checkpoint,
    CheckpointQueue,
    Envelope,
    EnvelopeKind,
    Waiter,
)
from runtime.checkpoint.errors import CheckpointFailed, WriterClosed
from runtime.checkpoint.memory import MemorySink
from runtime.checkpoint.process_local import ProcessLocal
from runtime.checkpoint.sink import Sink, WriterStats
from runtime.checkpoint.writer import CheckpointWriter

__all__ = [
    "DEFAULT_LIMITS",
    "BatchCollector",
    "BatchLimits",
    "Checkpoint",
    "CheckpointFailed",
    "CheckpointQueue",
    "CheckpointWriter",
    "Envelope",
    "EnvelopeKind",
    "MemorySink",
    "ProcessLocal",
    "Sink",
    "Waiter",
    "WriterClosed",
    "WriterStats",
]
