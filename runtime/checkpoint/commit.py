"""One batch's commit: write it to the sink, resolve its callers, poison the sessions it fails.

The writer (runtime.checkpoint.writer) decides who writes a batch and when; this is what
writing one means. A failed batch spanning several sessions is retried one session per
transaction, so one bad run does not fail unrelated runs; a batch whose outcome is unknown is
never written again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from runtime.checkpoint.batching import NO_SESSION, Envelope
from runtime.checkpoint.errors import CheckpointFailed, OutcomeUnknown
from runtime.checkpoint.poisoned import PoisonedSessions
from runtime.checkpoint.sink import Sink, WriterStats
from runtime.observe import metrics

logger = logging.getLogger(__name__)


class BatchCommit:
    """Commits batches of write envelopes to one sink, keeping the writer's stats."""

    def __init__(self, sink: Sink, failures: PoisonedSessions, stats: WriterStats) -> None:
        self.sink = sink
        self._failures = failures
        self._stats = stats

    def commit(self, writes: list[Envelope]) -> None:
        """Write `writes` as one transaction and resolve each one's caller."""
        if not writes:
            return
        try:
            written = self._write_batch(writes)
        except Exception as exc:
            by_session: dict[str, list[Envelope]] = {}
            for envelope in writes:
                # A write of its own is retried alone, as if it were a session of its own.
                key = envelope.session or f"{NO_SESSION}#{id(envelope)}"
                by_session.setdefault(key, []).append(envelope)
            if len(by_session) == 1 or isinstance(exc, OutcomeUnknown):
                # One session, or a batch that may have committed: fail it whole, never rewrite.
                for part in by_session.values():
                    self._fail_session(part[0].session, part, exc)
                return
            # The failed transaction rolled back, so each session's part can be retried
            # alone: only the runs whose own write fails get poisoned.
            for part in by_session.values():
                try:
                    results = self._write_batch(part)
                except Exception as part_exc:
                    self._fail_session(part[0].session, part, part_exc)
                else:
                    for envelope, result in zip(part, results, strict=True):
                        resolve(envelope, None, result)
        else:
            for envelope, result in zip(writes, written, strict=True):
                resolve(envelope, None, result)

    def _write_batch(self, envelopes: list[Envelope]) -> Sequence[object]:
        stats = self._stats
        stats.batches += 1
        stats.max_batch_items = max(stats.max_batch_items, len(envelopes))
        started = time.perf_counter()
        try:
            results = self.sink.write_batch([envelope.checkpoint for envelope in envelopes])
        except Exception:
            stats.failed_batches += 1
            raise
        finally:
            metrics.checkpoint_batch(len(envelopes), time.perf_counter() - started)
        stats.committed_batches += 1
        stats.checkpoints += len(envelopes)
        return [None] * len(envelopes) if results is None else results

    def _fail_session(self, session: str, part: list[Envelope], cause: BaseException) -> None:
        self._failures.poison(session, cause)
        if any(envelope.waiter is None for envelope in part):
            logger.warning(
                "async checkpoint(s) for session %r failed; session poisoned",
                session,
                exc_info=cause,
            )
        for envelope in part:
            fail(envelope, cause)


def fail(envelope: Envelope, cause: BaseException) -> None:
    """Fail the envelope's waiting caller, if any, with CheckpointFailed from `cause`."""
    if envelope.waiter is not None:
        envelope.waiter.set_exception(CheckpointFailed.caused_by(envelope.session, cause))


def resolve(envelope: Envelope, cause: BaseException | None, result: object = None) -> None:
    """Release the envelope's waiting caller: committed (with the sink's `result` for it), or
    failed by `cause`."""
    if cause is not None:
        fail(envelope, cause)
    elif envelope.waiter is not None:
        envelope.waiter.set_result(result)
