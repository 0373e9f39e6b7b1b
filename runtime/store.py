"""The database side of the checkpoint store: one transaction per batch of checkpoints.

The pure writer (runtime.checkpoint) decides what goes into a batch; `DatabaseSink` writes it:
per run one guarded `UPDATE ... RETURNING last_seq` that allocates dense event seqs and patches
the run, one upsert for all step rows, one insert for all events.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg
from django.db import DatabaseError, InterfaceError, OperationalError, connection, transaction
from django.utils import timezone

from runtime import conf, pgsink
from runtime.checkpoint.batching import BatchLimits, Checkpoint
from runtime.checkpoint.errors import OutcomeUnknown
from runtime.checkpoint.process_local import ProcessLocal
from runtime.checkpoint.writer import CheckpointWriter
from runtime.core.errors import LeaseLost, RunAlreadyFinished, StepChanged
from runtime.core.writes import (
    BranchClaim,
    BranchReport,
    EventDraft,
    FanoutGroupRow,
    HistoryWrite,
    LeaseGuard,
    OpenStepGuard,
    RunPatch,
    StepRow,
    SuspendGuard,
    UnfinishedGuard,
)
from runtime.models import Event, Run, Step, StepStatus
from runtime.runsql import run_update_statement
from runtime.sinkconn import SinkConnection

# input and created_at are written once, when the step is created.
_STEP_UPDATE_FIELDS = [
    "name",
    "kind",
    "status",
    "attempt",
    "result",
    "error",
    "started_at",
    "finished_at",
    "wake_at",
]


_IDLE_CHECK = 10.0  # seconds without a batch after which the connection is tested first


class WokenUp(LeaseLost):
    """A suspend lost the race with a wake-up: the executor must replay instead of sleeping."""

    code = "woken_up"


@dataclass
class _RunGroup:
    run_id: uuid.UUID
    guard: Any
    events: list[EventDraft] = field(default_factory=list)
    steps: dict[uuid.UUID, StepRow] = field(default_factory=dict)
    patch: RunPatch | None = None
    wakes: int = 0
    cancel_open_steps: bool = False
    fanouts: list[FanoutGroupRow] = field(default_factory=list)


def _group(writes: Sequence[tuple[str, HistoryWrite]]) -> list[_RunGroup]:
    """Merge each session's writes per run and guard; different sessions never merge, so each
    keeps its own guard check (two callback posts to one token must not pass as one)."""
    groups: dict[tuple[str, uuid.UUID, Any], _RunGroup] = {}
    for session, w in writes:
        g = groups.setdefault((session, w.run_id, w.guard), _RunGroup(w.run_id, w.guard))
        g.events.extend(w.events)
        for row in w.steps:
            g.steps.pop(row.id, None)  # the latest state wins and keeps FIFO placement
            g.steps[row.id] = row
        if w.run is not None:
            g.patch = w.run if g.patch is None else g.patch.merged(w.run)
        g.wakes += int(w.wake)
        g.cancel_open_steps = g.cancel_open_steps or w.cancel_open_steps
        g.fanouts.extend(w.fanouts)
    return list(groups.values())


class DatabaseSink:
    """Writes batches of `HistoryWrite` checkpoints through a connection of its own."""

    def __init__(self) -> None:
        self._connection = SinkConnection()
        self.transactions = 0
        self._committing = False
        self._last_used = 0.0

    def write_batch(self, checkpoints: Sequence[Checkpoint]) -> None:
        with self._connection.lent():
            self._write_checkpoints(checkpoints)

    def _write_checkpoints(self, checkpoints: Sequence[Checkpoint]) -> None:
        writes = [
            (cp.session, cp.payload) for cp in checkpoints if isinstance(cp.payload, HistoryWrite)
        ]
        # Fan-out branch outcomes (runtime.fanin): counted on their group in the same transaction;
        # branch claims (runtime.branch_claims): taken together with one conditional update.
        reports = [
            cp.payload for cp in checkpoints if isinstance(cp.payload, BranchReport | BranchClaim)
        ]
        if not writes and not reports:
            return
        groups = _group(writes)
        self._drop_dead_connection()
        try:
            self._write(groups, reports)
        except (InterfaceError, OperationalError) as exc:
            # Only a failure before COMMIT is retried: the transaction is rolled back for sure.
            # A failure during COMMIT leaves the outcome unknown, and replay settles it.
            if self._committing:
                connection.close()
                raise OutcomeUnknown(f"the batch's COMMIT failed: {exc}") from exc
            connection.close()  # a connection that died between batches: reconnect once
            self._write(groups, reports)
        finally:
            self._last_used = time.monotonic()

    def _drop_dead_connection(self) -> None:
        # After a quiet spell the server may have dropped the connection (restart, failover,
        # idle timeout). Finding out before the batch keeps a dead socket from being mistaken
        # for a COMMIT of unknown outcome.
        if connection.connection is None or time.monotonic() - self._last_used < _IDLE_CHECK:
            return
        if not connection.is_usable():
            connection.close()

    def close(self) -> None:
        self._connection.close()

    def _claims_alone(self, writes: Sequence[BranchReport | BranchClaim], now: datetime) -> bool:
        """A batch of nothing but branch claims, on PostgreSQL: one statement in autocommit.

        The claims are one conditional UPDATE, atomic by itself, so it needs no BEGIN and
        COMMIT round trips of its own. Returns False when the batch is not such a batch.
        """
        from runtime.branch_claims import ClaimBatch
        from runtime.branch_sql import execute

        claims = [w for w in writes if isinstance(w, BranchClaim)]
        if connection.vendor != "postgresql" or not claims or len(claims) != len(writes):
            return False
        batch = ClaimBatch(claims, now)
        if len(batch.statements) != 1:
            return False  # fresh and continuing claims: two statements, one transaction
        try:
            results = execute(batch.statements)
        except DatabaseError as exc:
            _raise_if_cut_off(exc.__cause__)
            raise  # the server answered: rolled back, so write_batch may write it again
        self.transactions += 1
        for fill in batch.receipts(results):
            fill()
        return True

    def _write(
        self, groups: list[_RunGroup], reports: Sequence[BranchReport | BranchClaim] = ()
    ) -> None:
        from runtime.fanin import first_check_at, insert_groups_txn, record_branch_writes_txn

        self._committing = False
        now = timezone.now()
        if not groups and self._claims_alone(reports, now):
            return
        if not reports and _one_statement(groups):
            try:
                check_at = first_check_at(now)
                if pgsink.write_groups(groups, now, _STEP_UPDATE_FIELDS, check_at):
                    self.transactions += 1
                    return
            except psycopg.Error as exc:
                _raise_if_cut_off(exc)
                # The server rolled the batch back (usually a failed guard): the portable
                # path below writes it again or names exactly what failed.
        with transaction.atomic():
            events: list[Event] = []
            steps: list[Step] = []
            for g in groups:
                last_seq = _update_run(g, now)
                if isinstance(g.guard, OpenStepGuard):
                    _check_step_open(g.guard)
                seq = last_seq - len(g.events)
                for draft in g.events:
                    seq += 1
                    events.append(
                        Event(
                            run_id=g.run_id,
                            seq=seq,
                            type=draft.type,
                            step_id=draft.step_id,
                            payload=draft.payload,
                            created_at=draft.at,
                        )
                    )
                steps.extend(_step_model(g.run_id, row) for row in g.steps.values())
            if steps:
                Step.objects.bulk_create(
                    steps,
                    update_conflicts=True,
                    unique_fields=["id"],
                    update_fields=_STEP_UPDATE_FIELDS,
                )
            # After the upserts: a step row written earlier in this batch is cancelled too.
            cancelled = [g.run_id for g in groups if g.cancel_open_steps]
            if cancelled:
                Step.objects.filter(run_id__in=cancelled).unfinished().update(
                    status=StepStatus.CANCELLED, finished_at=now
                )
            if events:
                Event.objects.bulk_create(events)
            insert_groups_txn([(g.run_id, row) for g in groups for row in g.fanouts], now)
            receipts = record_branch_writes_txn(reports, now)
            self._committing = True
        self._committing = False
        self.transactions += 1
        receipts.deliver()  # only a committed report gets its receipt


def _raise_if_cut_off(exc: BaseException | None) -> None:
    """A statement run in autocommit whose connection broke before the server answered may
    have committed: the batch's outcome is unknown, and it must never be written again."""
    if isinstance(exc, psycopg.Error) and exc.sqlstate is None:
        connection.close()
        raise OutcomeUnknown(f"the batch was cut off: {exc}") from exc


def _step_model(run_id: uuid.UUID, row: StepRow) -> Step:
    return Step(
        id=row.id,
        run_id=run_id,
        position=row.position,
        name=row.name,
        kind=row.kind,
        status=row.status,
        attempt=row.attempt,
        input=row.input,
        result=row.result,
        error=row.error,
        created_at=row.created_at,
        started_at=row.started_at,
        finished_at=row.finished_at,
        wake_at=row.wake_at,
        callback_token=row.callback_token,
    )


def _one_statement(groups: list[_RunGroup]) -> bool:
    """Batches of plain checkpoints on PostgreSQL take the one-statement path (runtime.pgsink)."""
    runs = [g.run_id for g in groups]
    if connection.vendor != "postgresql" or len(set(runs)) != len(runs):
        return False  # event seqs come from the run's final last_seq: one group per run
    return all(
        isinstance(g.guard, LeaseGuard | SuspendGuard | UnfinishedGuard) and not g.cancel_open_steps
        for g in groups
    )


def _json_param(column: str, value: Any) -> Any:
    return Run._meta.get_field(column).get_db_prep_value(value, connection)  # type: ignore[union-attr]


def _update_run(g: _RunGroup, now: datetime) -> int:
    """Allocate `len(g.events)` seqs, apply the patch and the guard; returns the new last_seq."""
    guard = g.guard
    if isinstance(guard, OpenStepGuard):
        # The step itself is checked after this UPDATE holds the run's row lock.
        guard = LeaseGuard(guard.token) if guard.token else UnfinishedGuard()
    sql, params = run_update_statement(
        guard,
        len(g.events),
        g.wakes,
        g.patch,
        now,
        json_param=_json_param,
        run_param=g.run_id.hex if connection.vendor == "sqlite" else g.run_id,
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        raise _guard_failure(g)
    return int(row[0])


def _check_step_open(guard: OpenStepGuard) -> None:
    # A fresh statement under the run's row lock: it sees every write committed before ours.
    open_steps = Step.objects.filter(id=guard.step_id).unfinished()
    if guard.due_by is not None:
        open_steps = open_steps.filter(wake_at__lte=guard.due_by)
    if not open_steps.exists():
        raise StepChanged(f"step {guard.step_id} has finished or its deadline moved")


def _guard_failure(g: _RunGroup) -> Exception:
    if isinstance(g.guard, OpenStepGuard):
        if g.guard.token is None:
            return RunAlreadyFinished(f"run {g.run_id} has already finished")
        return LeaseLost(f"this executor no longer owns run {g.run_id}")
    if isinstance(g.guard, UnfinishedGuard):
        return RunAlreadyFinished(f"run {g.run_id} has already finished")
    if isinstance(g.guard, SuspendGuard):
        still_ours = Run.objects.filter(id=g.run_id, lease_token=g.guard.token).exists()
        if still_ours:
            return WokenUp(f"run {g.run_id} was woken while suspending")
    return LeaseLost(f"this executor no longer owns run {g.run_id}")


def _new_writer() -> CheckpointWriter:
    settings = conf.get()
    limits = BatchLimits(
        max_items=settings.CHECKPOINT_MAX_ITEMS,
        max_bytes=settings.CHECKPOINT_MAX_BYTES,
        async_window=settings.CHECKPOINT_ASYNC_WINDOW,
    )
    return CheckpointWriter(DatabaseSink(), limits)


_process_writer: ProcessLocal[CheckpointWriter] = ProcessLocal(_new_writer)


def writer() -> CheckpointWriter:
    """This process's checkpoint writer (a fresh one in each forked Celery child)."""
    return _process_writer.get()
