"""The port batches are written through, and the writer's counters."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from runtime.checkpoint.batching import Checkpoint


class Sink(Protocol):
    """Where batches go. Implementations write a whole batch in one transaction."""

    def write_batch(self, checkpoints: Sequence[Checkpoint]) -> Sequence[object] | None:
        """Write every checkpoint in one transaction, or raise (and roll back) on failure.

        Returns what each checkpoint's writer gets back (a receipt), in order, or None when
        none gets anything."""
        ...

    def close(self) -> None:
        """Release resources; called on the writer thread at shutdown (may do nothing)."""
        ...


@dataclass
class WriterStats:
    """Counters, mutated only by the thread holding the sink's turn; other readers may lag."""

    batches: int = 0  # sink transactions attempted, isolation retries included
    committed_batches: int = 0
    failed_batches: int = 0
    checkpoints: int = 0  # checkpoints committed
    max_batch_items: int = 0  # largest batch handed to the sink
