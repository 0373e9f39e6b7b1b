"""What the checkpoint writer queues: checkpoints, batch limits, and who waits for them.

How queued checkpoints become batches is runtime.checkpoint.intake.
"""

from __future__ import annotations

import enum
import threading
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """One write to a run's history, opaque to the core.

    ``session`` is one execution of one run; a failure poisons the whole session. A write of
    its own (a fan-out branch's claim or report) has no session (``NO_SESSION``): its failure
    fails it alone and poisons nothing.
    ``payload`` is interpreted by the sink only (``None`` for a barrier). ``size`` is an
    approximate byte count used for the batch byte limit. ``sync`` marks a checkpoint whose
    caller is blocked until it is committed.
    """

    session: str
    payload: object
    size: int = 0
    sync: bool = False

    def __post_init__(self) -> None:
        if self.size < 0:
            raise ValueError(f"Checkpoint.size must be >= 0, got {self.size}")


@dataclass(frozen=True)
class BatchLimits:
    """Bounds on one batch: item count, approximate bytes, and the async wait window."""

    max_items: int = 1000
    max_bytes: int = 4 * 1024 * 1024
    async_window: float = 0.002

    def __post_init__(self) -> None:
        if self.max_items < 1:
            raise ValueError(f"max_items must be >= 1, got {self.max_items}")
        if self.max_bytes < 1:
            raise ValueError(f"max_bytes must be >= 1, got {self.max_bytes}")
        if self.async_window < 0:
            raise ValueError(f"async_window must be >= 0, got {self.async_window}")


DEFAULT_LIMITS = BatchLimits()


class Waiter:
    """A one-shot, thread-safe outcome slot: the writer resolves it, a caller waits on it.

    Built on bare C-level locks rather than ``threading.Event``, whose Python-level condition
    an exception raised by a signal handler in the waiting (main) thread can leave locked,
    blocking the thread that resolves it, and with it the writer, for good.
    """

    __slots__ = ("_error", "_guard", "_outcome", "_settled", "_value")

    def __init__(self) -> None:
        self._outcome = threading.Lock()  # held until an outcome is set
        self._outcome.acquire()
        self._guard = threading.Lock()
        self._settled = False
        self._error: BaseException | None = None
        self._value: object = None

    def set_result(self, value: object = None) -> None:
        """Mark the outcome as success with what the sink returned for the checkpoint (its
        receipt, if any). Later calls are ignored: the first outcome wins."""
        self._settle(None, value)

    def set_exception(self, exc: BaseException) -> None:
        """Mark the outcome as failure with ``exc``, unless an outcome was already set."""
        self._settle(exc)

    def done(self) -> bool:
        """Return whether an outcome has been set."""
        return self._settled

    def wait(self, timeout: float | None = None) -> object:
        """Block until resolved and return the result; raise the stored exception, or
        ``TimeoutError`` on timeout."""
        if not self._outcome.acquire(True, -1 if timeout is None else timeout):
            raise TimeoutError("checkpoint outcome not available within timeout")
        self._outcome.release()  # stays open for any later wait()
        if self._error is not None:
            raise self._error
        return self._value

    def _settle(self, error: BaseException | None, value: object = None) -> None:
        with self._guard:
            if self._settled:
                return
            self._error = error
            self._value = value
            self._settled = True
            self._outcome.release()


class EnvelopeKind(enum.Enum):
    """What the writer thread does with an envelope."""

    WRITE = "write"  # hand the checkpoint to the sink
    BARRIER = "barrier"  # resolve once everything queued before it is written
    STOP = "stop"  # last envelope ever queued: end the writer thread


NO_SESSION = ""  # a write of its own, and the control envelopes


@dataclass(frozen=True, slots=True)
class Envelope:
    """A queued unit of work: a checkpoint (or control message) and who waits for it."""

    checkpoint: Checkpoint
    waiter: Waiter | None = None
    kind: EnvelopeKind = EnvelopeKind.WRITE

    @classmethod
    def write(cls, checkpoint: Checkpoint, waiter: Waiter | None = None) -> Envelope:
        """Wrap a checkpoint to be written; ``waiter`` is set for synchronous callers."""
        return cls(checkpoint, waiter, EnvelopeKind.WRITE)

    @classmethod
    def barrier(cls, session: str, waiter: Waiter) -> Envelope:
        """An empty synchronous checkpoint for ``session``; nothing reaches the sink."""
        return cls(Checkpoint(session, None, 0, sync=True), waiter, EnvelopeKind.BARRIER)

    @classmethod
    def stop(cls) -> Envelope:
        """The shutdown marker, always the last envelope of a writer's queue."""
        return cls(Checkpoint(NO_SESSION, None, 0, sync=True), None, EnvelopeKind.STOP)

    @property
    def session(self) -> str:
        return self.checkpoint.session

    @property
    def sync(self) -> bool:
        """Whether someone is blocked on this envelope, so its batch must flush promptly."""
        return self.checkpoint.sync or self.kind is not EnvelopeKind.WRITE

    @property
    def size(self) -> int:
        return self.checkpoint.size if self.kind is EnvelopeKind.WRITE else 0
