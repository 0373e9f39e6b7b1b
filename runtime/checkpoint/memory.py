"""An in-memory :class:`Sink` for tests: users' workflow tests and our own."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from runtime.checkpoint.batching import Checkpoint


class MemorySink:
    """Records each committed batch; can be told to fail or to hold a write in progress.

    ``gate``: when given, ``write_batch`` blocks until the event is set, which lets a test
    pile up writers behind an in-flight transaction. ``entered`` is set whenever a
    ``write_batch`` call starts. Failed batches are not recorded (they rolled back).
    """

    def __init__(self, *, gate: threading.Event | None = None) -> None:
        self.batches: list[list[Checkpoint]] = []
        self.attempts = 0
        self.closed = False
        self.gate = gate
        self.entered = threading.Event()
        self._lock = threading.Lock()
        self._next_failures: list[BaseException] = []
        self._failing_sessions: dict[str, BaseException] = {}

    def fail_next(self, exc: BaseException, times: int = 1) -> None:
        """Make the next ``times`` calls to ``write_batch`` raise ``exc``."""
        with self._lock:
            self._next_failures.extend([exc] * times)

    def fail_session(self, session: str, exc: BaseException) -> None:
        """Make every batch holding a checkpoint of ``session`` raise ``exc``."""
        with self._lock:
            self._failing_sessions[session] = exc

    @property
    def checkpoints(self) -> list[Checkpoint]:
        """All committed checkpoints, in commit order."""
        with self._lock:
            return [cp for batch in self.batches for cp in batch]

    def write_batch(self, checkpoints: Sequence[Checkpoint]) -> None:
        """Record the batch, or raise a configured failure instead."""
        self.entered.set()
        if self.gate is not None:
            self.gate.wait()
        with self._lock:
            self.attempts += 1
            if self._next_failures:
                raise self._next_failures.pop(0)
            for cp in checkpoints:
                failure = self._failing_sessions.get(cp.session)
                if failure is not None:
                    raise failure
            self.batches.append(list(checkpoints))

    def close(self) -> None:
        """Mark the sink closed; it keeps its recorded batches."""
        self.closed = True
