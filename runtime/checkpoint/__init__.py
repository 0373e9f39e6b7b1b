"""The checkpoint store's pure core: batch assembly, the writer thread, an in-memory sink.

Nothing here imports Django; the database sink lives in an adapter next to the models.
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
