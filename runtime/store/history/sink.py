"""`DatabaseSink`: the database side of the checkpoint store, one transaction per batch.

The pure writer (runtime.checkpoint) decides what goes into a batch; the sink sorts it by kind
(runtime.store.history.batch) and writes it on a connection of its own. On PostgreSQL (the one place
the sink asks which database it writes to) a batch of one kind may take a fast path:

1. nothing but branch claims: one conditional UPDATE in autocommit;
2. branch reports (and claims) alone: one round trip when they decide nothing
   (runtime.store.fanout.quiet_reports), else two (runtime.store.fanout.branch_reports);
3. history writes alone, under guards it can check: one round trip
   (runtime.store.history.pg_statements).

Everything else, any database, and a batch path 3 rolled back, goes as one transaction: the
history writes (runtime.store.history.history_txn), then the branch reports and claims
(runtime.store.fanout.branch_reports); a failed guard is named exactly there.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime, timedelta

import psycopg
from django.db import DatabaseError, InterfaceError, OperationalError, connection, transaction

from runtime import conf
from runtime.checkpoint.batching import Checkpoint
from runtime.checkpoint.errors import OutcomeUnknown
from runtime.core.branches import receipt_key
from runtime.core.clock import current_time
from runtime.core.writes import HistoryWrite, LeaseGuard, SuspendGuard, UnfinishedGuard, Woken
from runtime.store.connection import SinkConnection, drop_if_dead
from runtime.store.dialect import PipelinedTransaction, execute, postgres
from runtime.store.fanout import branch_reports, quiet_reports
from runtime.store.fanout.branch_claims import ClaimBatch
from runtime.store.fanout.branch_reports import Receipts
from runtime.store.history import pg_statements
from runtime.store.history.batch import BranchWrites, SortedBatch
from runtime.store.history.history_txn import write_parts_txn
from runtime.store.history.parts import STEP_UPDATE_FIELDS, RunPart, run_parts

_IDLE_CHECK = 10.0  # seconds without a batch after which the connection is tested first


class DatabaseSink:
    """Writes batches of checkpoints through a connection of its own."""

    def __init__(self) -> None:
        self._connection = SinkConnection()
        self.transactions = 0
        self._committing = False
        self._last_used = 0.0

    def write_batch(self, checkpoints: Sequence[Checkpoint]) -> list[object]:
        """Write the batch in one transaction; returns each checkpoint's receipt (a branch
        claim's or report's, `Woken` for a suspend that a wake-up raced; None for the others),
        in order."""
        with self._connection.lent():
            receipts = self._write_checkpoints(checkpoints)
        if not receipts and not receipts.woken:
            return [None] * len(checkpoints)  # history writes alone: no receipts to hand out
        return [_receipt(cp.payload, receipts) for cp in checkpoints]

    def close(self) -> None:
        self._connection.close()

    def _write_checkpoints(self, checkpoints: Sequence[Checkpoint]) -> Receipts:
        batch = SortedBatch.of(checkpoints)
        branch_writes = batch.branch_writes
        if not batch.history_writes and not branch_writes:
            return Receipts()
        parts = run_parts(batch.history_writes)
        self._drop_dead_connection()
        try:
            return self._write(parts, branch_writes)
        except (InterfaceError, OperationalError) as exc:
            # Only a failure before COMMIT is retried: the transaction is rolled back for sure.
            # A failure during COMMIT leaves the outcome unknown, and replay settles it.
            if self._committing:
                connection.close()
                raise OutcomeUnknown(f"the batch's COMMIT failed: {exc}") from exc
            connection.close()  # a connection that died between batches: reconnect once
            return self._write(parts, branch_writes)
        finally:
            self._last_used = time.monotonic()

    def _drop_dead_connection(self) -> None:
        # The server may have dropped the connection since the last batch (restart, failover,
        # idle timeout). Finding out before the batch keeps a dead socket from being mistaken
        # for a COMMIT of unknown outcome, whose step would run again: tested after a quiet
        # spell, or at once when the server said something meanwhile (a failover a moment
        # after the last batch: issue 56).
        drop_if_dead(time.monotonic() - self._last_used, _IDLE_CHECK)

    def _write(self, parts: list[RunPart], branch_writes: BranchWrites) -> Receipts:
        self._committing = False
        now = current_time()
        if postgres():
            fast = self._postgres_fast_path(parts, branch_writes, now)
            if fast is not None:
                return fast
        with transaction.atomic():
            woken = write_parts_txn(parts, now, first_check_at(now))
            receipts = branch_reports.record_branch_writes_txn(branch_writes, now)
            receipts.woken.update(woken)
            self._committing = True
        self._committing = False
        self.transactions += 1
        return receipts  # only a committed batch hands its receipts out

    def _postgres_fast_path(
        self, parts: list[RunPart], branch_writes: BranchWrites, now: datetime
    ) -> Receipts | None:
        """The batch written by a PostgreSQL fast path; None when it takes none (or one rolled
        it back) and the transaction path must write it."""
        if not parts:
            receipts = self._claims_alone(branch_writes, now)
            if receipts is None:
                receipts = self._branch_writes_alone(branch_writes, now)
            return receipts
        if not branch_writes:
            return self._one_round_trip(parts, now)
        return None

    def _claims_alone(self, writes: BranchWrites, now: datetime) -> Receipts | None:
        """A batch of nothing but branch claims, on PostgreSQL: one statement in autocommit.

        The claims are one conditional UPDATE, atomic by itself, so it needs no BEGIN and
        COMMIT round trips of its own; fresh claims do not wait for the WAL flush
        (runtime.store.fanout.branch_claims). Returns None when the batch is not such a batch.
        """
        claims = writes.claims
        if not claims or writes.reports:
            return None
        batch = ClaimBatch(claims, now, wait_for_flush=False)
        if len(batch.statements) != 1:
            return None  # fresh and continuing claims: two statements, one transaction
        try:
            results = execute(batch.statements)
        except DatabaseError as exc:
            _raise_if_cut_off(exc.__cause__)
            raise  # the server answered: rolled back, so write_batch may write it again
        self.transactions += 1
        receipts = Receipts()
        receipts.add_claims(claims, batch.receipts(results))
        return receipts

    def _branch_writes_alone(self, writes: BranchWrites, now: datetime) -> Receipts | None:
        """A batch of branch reports (and claims), on PostgreSQL: one round trip if it decides
        nothing, else two, BEGIN in the first and COMMIT in the second (a fan-out branch's
        report on a prefork child, whose batches hold one branch each). Returns None when the
        batch is not such a batch."""
        if not writes:
            return None
        quiet = self._quiet_reports(writes, now)
        if quiet is not None:
            return quiet
        return self._two_rounds(writes, now)

    def _two_rounds(self, writes: BranchWrites, now: datetime) -> Receipts:
        """Branch writes in two round trips, BEGIN in the first and COMMIT in the second."""
        txn = PipelinedTransaction()
        try:
            with txn:
                receipts = branch_reports.record_branch_writes_txn(writes, now)
        except BaseException:
            self._committing = txn.committing
            raise
        self.transactions += 1
        return receipts

    def _quiet_reports(self, writes: BranchWrites, now: datetime) -> Receipts | None:
        """Reports that decide nothing in one round trip (runtime.store.fanout.quiet_reports); None
        when the batch is not such a batch, or the server found it was not and rolled it back."""
        batch = quiet_reports.quiet_batch(writes, now)
        if batch is None:
            return None
        try:
            with PipelinedTransaction():
                results = execute(batch.statements, last=True)
        except DatabaseError as exc:
            _raise_if_cut_off(exc.__cause__)  # its COMMIT went out with it
            return None  # the server rolled it back: the two rounds decide the batch exactly
        self.transactions += 1
        if not batch.wrote_reports(results):
            # The reports would decide or release: none was written, the claims committed.
            receipts = Receipts()
            receipts.add_claims(batch.claims.claims, batch.claims.receipts(results[2:]))
            receipts.update(self._two_rounds(BranchWrites(reports=batch.reports), now))
            return receipts
        return batch.receipts(results)

    def _one_round_trip(self, parts: list[RunPart], now: datetime) -> Receipts | None:
        """Plain checkpoints on PostgreSQL in one round trip; None if the batch is not one."""
        if not _plain_parts(parts):
            return None
        try:
            woken = pg_statements.write_parts(parts, now, STEP_UPDATE_FIELDS, first_check_at(now))
        except psycopg.Error as exc:
            _raise_if_cut_off(exc)
            # The server rolled the batch back (usually a failed guard): the transaction path
            # writes it again or names exactly what failed.
            return None
        if woken is None:
            return None
        self.transactions += 1
        receipts = Receipts()
        receipts.woken.update(woken)
        return receipts


def first_check_at(now: datetime) -> datetime:
    """When the fan-out sweep first looks at a new group: one lease from its start."""
    return now + timedelta(seconds=conf.get().LEASE_SECONDS)


def _raise_if_cut_off(exc: BaseException | None) -> None:
    """A statement run in autocommit, or a pipeline that carried its COMMIT, whose connection
    broke before the server answered may have committed: the batch's outcome is unknown, and
    it must never be written again."""
    if isinstance(exc, psycopg.Error) and exc.sqlstate is None:
        connection.close()
        raise OutcomeUnknown(f"the batch was cut off: {exc}") from exc


def _plain_parts(parts: list[RunPart]) -> bool:
    runs = [part.run_id for part in parts]
    if len(set(runs)) != len(runs):
        return False  # event seqs come from the run's final last_seq: one part per run
    return all(
        isinstance(part.guard, LeaseGuard | SuspendGuard | UnfinishedGuard)
        and not part.cancel_open_steps
        for part in parts
    )


def _receipt(write: object, receipts: Receipts) -> object:
    if isinstance(write, HistoryWrite) and isinstance(write.guard, SuspendGuard):
        wakeups = receipts.woken.get(write.run_id)
        return None if wakeups is None else Woken(wakeups)
    key = receipt_key(write)
    return None if key is None else receipts.get(key)
