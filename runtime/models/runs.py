"""Run: a workflow's execution, the row its history (runtime.models.history) hangs from.

Every change to a run's history is one transaction that appends events (dense `seq` per run,
allocated from `Run.last_seq`) and upserts the Run and Step rows those events describe.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.conf import settings
from django.db import models, router, transaction
from django.db.models import Count, Q

from runtime.core.identity import MAX_NAME_LENGTH
from runtime.core.run_ids import new_run_id
from runtime.models.flow import admission_indexes
from runtime.models.payloads import PayloadField
from runtime.models.states import (
    ACTIVE_RUN_STATES,
    FINISHED_RUN_STATES,
    RunStatus,
    choices,
)

ADMISSION_INDEXES = admission_indexes([s.value for s in ACTIVE_RUN_STATES])


_DELETE_CHUNK = 500  # runs per DELETE: far below any database's parameter limit


def _locked_pks(runs: models.QuerySet[Any]) -> list[Any]:
    """Lock these runs' rows (in key order, like every multi-run write) until the transaction
    ends, and return their keys."""
    return list(runs.select_for_update(of=("self",)).order_by("pk").values_list("pk", flat=True))


def _delete_pks(runs: models.QuerySet[Any], pks: list[Any]) -> dict[str, int]:
    """Delete the locked runs `pks` with their rows (the base manager's plain delete)."""
    plain = runs.model._base_manager.using(runs.db)
    deleted: Counter[str] = Counter()
    for start in range(0, len(pks), _DELETE_CHUNK):
        _, counts = plain.filter(pk__in=pks[start : start + _DELETE_CHUNK]).delete()
        deleted.update(counts)
    return dict(deleted)


def status_counts(rows: models.QuerySet[Any]) -> dict[str, int]:
    grouped = rows.order_by().values_list("status").annotate(n=Count("pk"))
    return dict(grouped.values_list("status", "n"))


class RunQuerySet(models.QuerySet["Run"]):
    def counts_by_status(self) -> dict[str, int]:
        """How many of these runs are in each status (statuses with none are left out)."""
        return status_counts(self)

    def pending(self) -> RunQuerySet:
        return self.filter(status=RunStatus.PENDING)

    def running(self) -> RunQuerySet:
        return self.filter(status=RunStatus.RUNNING)

    def waiting(self) -> RunQuerySet:
        return self.filter(status=RunStatus.WAITING)

    def active(self) -> RunQuerySet:
        return self.filter(status__in=ACTIVE_RUN_STATES)

    def finished(self) -> RunQuerySet:
        return self.filter(status__in=FINISHED_RUN_STATES)

    def delete(self) -> tuple[int, dict[str, int]]:
        """Delete the runs with their steps, events and fan-out groups, rows locked first.

        Steps and events reference their run without a database constraint: checked per row,
        it made every step's write about a tenth slower. Every write that adds steps or
        events updates the run's row in the same transaction (seqs come from it), so locking
        the runs first keeps a checkpoint from adding rows between the deletion of a run's
        rows and of the run itself; it then finds no run and writes nothing.
        """
        # The alias given to using(), else where the router sends writes (as Django's delete).
        db = self._db or router.db_for_write(self.model)  # type: ignore[attr-defined]
        with transaction.atomic(using=db):
            # Deleted exactly as locked (the base manager's plain delete, in chunks).
            deleted = _delete_pks(self.using(db), _locked_pks(self.using(db)))
            return sum(deleted.values()), deleted


class Run(models.Model):
    # Time-ordered: the history's partitions are ranges of run ids (docs/design/history.md).
    id = models.UUIDField(primary_key=True, default=new_run_id, editable=False)
    workflow = models.CharField(max_length=MAX_NAME_LENGTH, db_index=True)
    input = PayloadField(default=dict)
    status = models.CharField(max_length=16, choices=choices(RunStatus), default=RunStatus.PENDING)
    result = PayloadField(null=True, blank=True)
    error = PayloadField(null=True, blank=True)
    # Unique per owner and workflow (the constraints below), not across the table: one user's
    # key never names another user's run. Keys the runtime makes (runtime.core.identity's
    # RESERVED_KEY_PREFIXES) cannot be given by callers. Indexed for the children's lookups.
    idempotency_key = models.CharField(max_length=255, null=True, blank=True, db_index=True)
    # Who started the run through the API, the admin or `start(..., owner=user)`; children and
    # forks inherit it; schedule ticks have none (runtime.access says who sees what). No
    # constraint, like the other references: a user's deletion leaves their runs ownerless
    # through Django's collector, which finds them by the owner index below.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="fanfold_runs",
        db_constraint=False,
        db_index=False,
        editable=False,
    )
    created_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField()
    # The last event seq handed out: appends take seqs from here, under the row lock.
    last_seq = models.PositiveIntegerField(default=0)
    # When the run should next execute without any other trigger (timers, a new run).
    wake_at = models.DateTimeField(null=True, blank=True)
    # The executor that owns the run, and until when without a heartbeat (fencing token).
    lease_token = models.CharField(max_length=64, null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    # The liveness key of the process holding the lease (runtime.leases.liveness): while
    # that process lives it holds a PostgreSQL advisory lock on this key.
    lease_owner = models.BigIntegerField(null=True, blank=True)
    # Bumped by whoever makes a waiting run ready (callback, fan-in); a suspend that saw an
    # older value replays again instead of going to sleep.
    wakeups = models.PositiveIntegerField(default=0)
    # A fork (runtime.forks): the run whose records before `forked_from_position` it copied.
    # No constraint, like steps and events: a source may be deleted and its forks kept.
    forked_from = models.ForeignKey(
        "self",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="forks",
        db_constraint=False,
        db_index=False,
        editable=False,
    )
    forked_from_position = models.PositiveIntegerField(null=True, blank=True, editable=False)
    # Flow control (runtime.flow): 0-9, higher first; a concurrency key ("" for the whole
    # workflow) only on runs of workflows with `concurrency=N`, which wait unadmitted until a
    # slot is theirs. Every other run is admitted from the start: its claim pays nothing.
    priority = models.PositiveSmallIntegerField(default=0)
    concurrency_key = models.CharField(max_length=255, null=True, blank=True)
    admitted = models.BooleanField(default=True)
    # The deployment version whose code runs this run (runtime.versions, docs/deploying.md):
    # only workers serving it execute it. "" for runs recorded before versions existed.
    # db_default too: rows inserted by plain SQL (bulk loads, other tools) are of no version.
    app_version = models.CharField(
        "version", max_length=64, default="", db_default="", blank=True, editable=False
    )

    # The queue of the worker node that keeps this waiting run parked (runtime.warm.routing):
    # a resume goes there first. Written by each suspend; cleared when the sweep falls back.
    warm_queue = models.CharField(max_length=255, null=True, blank=True, editable=False)

    objects = RunQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["-created_at", "-id"], name="run_newest_idx"),
            models.Index(fields=["status", "-created_at"], name="run_status_newest_idx"),
            models.Index(
                fields=["wake_at"],
                name="run_due_idx",
                condition=Q(status__in=["pending", "running", "waiting"]),
            ),
            models.Index(
                fields=["lease_expires_at"],
                name="run_lease_idx",
                condition=Q(lease_token__isnull=False),
            ),
            models.Index(
                fields=["forked_from"], name="run_forks_idx", condition=Q(forked_from__isnull=False)
            ),
            # Retention (runtime.lifecycle): finished runs, oldest first.
            models.Index(
                fields=["finished_at"],
                name="run_finished_idx",
                condition=Q(status__in=[s.value for s in FINISHED_RUN_STATES]),
            ),
            models.Index(
                fields=["owner", "-created_at", "-id"],
                name="run_owner_newest_idx",
                condition=Q(owner__isnull=False),
            ),
            *ADMISSION_INDEXES,
            # Runs in flight by version: `fanfold versions`, upgrades, stranded runs.
            models.Index(
                fields=["app_version", "status"],
                name="run_version_active_idx",
                condition=Q(status__in=[s.value for s in ACTIVE_RUN_STATES]),
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=[s.value for s in RunStatus]), name="run_status_valid"
            ),
            # Idempotency keys are scoped to the owner and the workflow (two partial
            # constraints: NULL owners are never equal in a plain one).
            models.UniqueConstraint(
                fields=["owner", "workflow", "idempotency_key"],
                condition=Q(idempotency_key__isnull=False, owner__isnull=False),
                name="run_unique_owner_key",
            ),
            models.UniqueConstraint(
                fields=["workflow", "idempotency_key"],
                condition=Q(idempotency_key__isnull=False, owner__isnull=True),
                name="run_unique_ownerless_key",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.workflow} {self.id} ({self.status})"

    def delete(
        self, using: str | None = None, keep_parents: bool = False
    ) -> tuple[int, dict[str, int]]:
        """Delete this run with its steps, events and fan-out groups (see RunQuerySet.delete)."""
        db = using or router.db_for_write(Run, instance=self)
        with transaction.atomic(using=db):
            _locked_pks(Run.objects.using(db).filter(pk=self.pk))
            return super().delete(using=db, keep_parents=keep_parents)

    @property
    def args(self) -> list[Any]:
        return list(self.input.get("args", []))

    @property
    def kwargs(self) -> dict[str, Any]:
        return dict(self.input.get("kwargs", {}))

    @property
    def is_finished(self) -> bool:
        return self.status in FINISHED_RUN_STATES
