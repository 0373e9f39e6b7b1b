"""The per-process checkpoint writer: group-commits checkpoints from many threads to a sink.

Workflow threads call :meth:`CheckpointWriter.write` (block until committed) or
:meth:`CheckpointWriter.submit` (queue and return). Each batch goes to the sink as one
transaction, written by whoever holds the sink's turn (runtime.checkpoint.intake): a caller
of ``write`` when the sink is free, otherwise the writer thread.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import replace

from runtime.checkpoint.batching import (
    DEFAULT_LIMITS,
    BatchLimits,
    Checkpoint,
    Envelope,
    EnvelopeKind,
    Waiter,
)
from runtime.checkpoint.commit import BatchCommit, fail, resolve
from runtime.checkpoint.errors import WriterClosed
from runtime.checkpoint.held_signals import held_in_main_thread
from runtime.checkpoint.intake import Intake
from runtime.checkpoint.poisoned import PoisonedSessions
from runtime.checkpoint.sink import Sink, WriterStats
from runtime.observe import tracing

__all__ = ["CheckpointWriter", "Sink", "WriterStats"]

logger = logging.getLogger(__name__)

ATEXIT_TIMEOUT = 10.0


class CheckpointWriter:
    """Group-commits checkpoints from many threads, one batch at a time.

    A caller of :meth:`write` that finds the sink free writes the batch holding its
    checkpoint itself; everything else goes through the writer thread, which starts lazily on
    the first submit/write, so constructing a writer does no I/O. A failed batch fails every
    checkpoint in it and poisons its sessions: nothing later in a poisoned session is
    written. A failed batch spanning several sessions is retried one session per
    transaction, so one bad run does not fail unrelated runs. Not fork-safe by itself: hold
    it in a :class:`ProcessLocal`.
    """

    def __init__(
        self,
        sink: Sink,
        limits: BatchLimits = DEFAULT_LIMITS,
        *,
        clock: Callable[[], float] = time.monotonic,
        wait: Callable[[float], object] | None = None,
        name: str = "fanfold-checkpoint-writer",
    ) -> None:
        self.intake = Intake(limits, clock, wait)
        self._name = name
        self._failures = PoisonedSessions()
        self._lock = threading.Lock()  # orders start, close and put: STOP is queued last
        self._thread: threading.Thread | None = None
        self._pid: int | None = None
        self._closed = False
        self._death: BaseException | None = None
        self.stats = WriterStats()
        self._batches = BatchCommit(sink, self._failures, self.stats)

    # -- caller side ---------------------------------------------------------------

    def submit(self, cp: Checkpoint) -> None:
        """Queue an asynchronous checkpoint and return at once.

        Raises :class:`CheckpointFailed` if the session is already poisoned. A later
        failure of this checkpoint poisons its session and surfaces on the next
        ``write()`` or ``barrier()`` of that session.
        """
        self._failures.raise_if_poisoned(cp.session)
        self._enqueue(Envelope(replace(cp, sync=False) if cp.sync else cp))

    def write(self, cp: Checkpoint) -> object:
        """Queue a synchronous checkpoint and block until it is committed; returns what the sink
        returned for it (its receipt, if any).

        When the sink is free, the caller writes the batch holding it (with everything queued
        before it) itself instead of handing it to the writer thread; the main thread does so
        with its signal handlers held until the turn is given back. Raises
        :class:`CheckpointFailed` if it was not committed, including when an earlier
        checkpoint of the same session failed.
        """
        return self.write_all((cp,))[0]

    def write_all(self, cps: Sequence[Checkpoint]) -> list[object]:
        """`write` for several checkpoints queued together, so that they share a batch unless
        its limits cut it; returns once all are committed, with what the sink returned for
        each (its receipt, if any). Raises :class:`CheckpointFailed` if any was not (each
        fails alone only if the batch was cut between them)."""
        for cp in cps:
            self._failures.raise_if_poisoned(cp.session)
        began = time.perf_counter()
        waiters: list[Waiter] = []
        envelopes: list[Envelope] = []
        for cp in cps:
            waiter = Waiter()
            waiters.append(waiter)
            envelopes.append(Envelope(cp if cp.sync else replace(cp, sync=True), waiter))
        with held_in_main_thread():
            with self._lock:
                self._check_open()
                batch = self.intake.lead_with(*envelopes)
            while batch is not None:
                self._write_turn(batch)
                if waiters[-1].done():
                    break
                batch = self.intake.lead()
        results: list[object] = []
        try:
            for waiter in waiters:
                results.append(waiter.wait())
            return results
        finally:
            tracing.waited_for_commit(time.perf_counter() - began)

    def barrier(self, session: str) -> None:
        """Return once everything queued before this call has been written.

        Raises :class:`CheckpointFailed` if any checkpoint of ``session`` failed.
        """
        self._failures.raise_if_poisoned(session)
        waiter = Waiter()
        with self._lock:
            thread = self._thread
            live = thread is not None and not self._closed
            if live:
                self._check_process()
                self.intake.put(Envelope.barrier(session, waiter))
        if live:
            waiter.wait()
            return
        # Never started (nothing in flight) or closed (close() drains): no envelope needed.
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        self._failures.raise_if_poisoned(session)

    def reset_session(self, session: str) -> None:
        """Forget a poisoned session. Call only once none of its checkpoints are queued."""
        self._failures.forget(session)

    def close(self, timeout: float | None = 10.0) -> None:
        """Write everything already queued, then stop the writer thread.

        Idempotent. Raises ``TimeoutError`` if the thread has not finished within
        ``timeout`` seconds; later submits raise :class:`WriterClosed`.
        """
        with self._lock:
            thread = self._thread
            if not self._closed and thread is not None and self._pid == _process_id:
                self.intake.put(Envelope.stop())
            self._closed = True
        if thread is None or thread is threading.current_thread():
            return
        thread.join(timeout)
        if thread.is_alive():
            raise TimeoutError(f"{self._name} did not drain within {timeout}s")

    def _enqueue(self, envelope: Envelope) -> None:
        with self._lock:
            self._check_open()
            self.intake.put(envelope)

    def _check_open(self) -> None:
        if self._pid is not None and self._pid != _process_id:
            self._check_process()
        if self._closed:
            raise WriterClosed(f"{self._name} is closed") from self._death
        if self._thread is None:
            self._start()

    def _write_turn(self, batch: list[Envelope]) -> None:
        """Write a batch taken by a caller of write(), then give the sink's turn back."""
        try:
            self._handle(batch)
        except BaseException as exc:
            # Not a failed write (those are handled per batch) but an interrupt or a bug in
            # this thread, possibly mid-write.
            self._abandon(batch, exc)
            raise
        finally:
            self.intake.end_turn()

    def _check_process(self) -> None:
        if self._pid is not None and self._pid != _process_id:
            raise RuntimeError(
                "CheckpointWriter was started in another process; "
                "hold it in a ProcessLocal so each process builds its own"
            )

    def _start(self) -> None:
        self._pid = _process_id
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()
        _started_writers.add(self)

    # -- writer thread -------------------------------------------------------------

    def _run(self) -> None:
        batch: list[Envelope] = []
        try:
            while True:
                batch = self.intake.next_batch() or []
                stop = self._handle(batch)
                self.intake.end_turn()
                if stop:
                    return
        except BaseException as exc:
            # A bug, not a sink failure (those are caught per batch): fail everyone who
            # waits rather than leave them blocked forever. The turn is never given back,
            # so no caller writes anything after a batch whose outcome is unknown.
            self._die(exc, batch)
            logger.exception("%s died; failing all queued checkpoints", self._name)
            raise
        finally:
            try:
                self._batches.sink.close()
            except Exception:
                logger.exception("%s: sink.close() failed", self._name)

    def _handle(self, batch: list[Envelope]) -> bool:
        """Process one batch; return True when it held the STOP marker."""
        stop = False
        writes: list[Envelope] = []
        barriers: list[Envelope] = []
        for envelope in batch:
            if envelope.kind is EnvelopeKind.STOP:
                stop = True
            elif envelope.kind is EnvelopeKind.BARRIER:
                barriers.append(envelope)
            else:
                cause = self._failures.cause(envelope.session)
                if cause is None:
                    writes.append(envelope)
                else:
                    fail(envelope, cause)
        self._batches.commit(writes)
        for envelope in barriers:
            resolve(envelope, self._failures.cause(envelope.session))
        return stop

    def _die(self, exc: BaseException, batch: list[Envelope]) -> None:
        with self._lock:
            self._closed = True
            self._death = exc
        self._abandon(batch, exc)
        for envelope in self.intake.take_all():
            fail(envelope, exc)

    def _abandon(self, batch: list[Envelope], exc: BaseException) -> None:
        """A batch whose write an exception cut short, so whether it committed is unknown:
        poison its sessions and fail its callers, so nothing is written as if it succeeded."""
        for envelope in batch:
            if envelope.kind is EnvelopeKind.WRITE:
                self._failures.poison(envelope.session, exc)
            fail(envelope, exc)


# Writers whose thread was started in this process, drained at interpreter exit.
_started_writers: weakref.WeakSet[CheckpointWriter] = weakref.WeakSet()


def _drain_started_writers() -> None:
    pid = os.getpid()
    for writer in list(_started_writers):
        if writer._pid != pid:
            continue
        try:
            writer.close(ATEXIT_TIMEOUT)
        except Exception:
            logger.exception("checkpoint writer %r did not drain at exit", writer._name)


atexit.register(_drain_started_writers)
# This process's id, asked on every checkpoint: os.getpid() is a system call each time.
_process_id = os.getpid()


def _forked() -> None:
    global _process_id
    _process_id = os.getpid()
    # A forked child has none of the parent's writer threads; it must not try to drain them.
    _started_writers.clear()


os.register_at_fork(after_in_child=_forked)
