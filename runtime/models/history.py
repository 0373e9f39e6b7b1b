"""Step and Event: a run's append-only event log and the step rows kept in step with it.

Every change to a run's history is one transaction that appends events (dense `seq` per run,
allocated from `Run.last_seq`) and upserts the Run and Step rows those events describe.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from django.db import models
from django.db.models import Q

from runtime.core.identity import MAX_NAME_LENGTH
from runtime.core.writes import StepRow
from runtime.models.payloads import PayloadField
from runtime.models.runs import Run, status_counts
from runtime.models.states import EventType, StepKind, StepStatus, choices, shown_step_status


class StepQuerySet(models.QuerySet["Step"]):
    def counts_by_status(self) -> dict[str, int]:
        """How many of these steps are in each status (statuses with none are left out)."""
        return status_counts(self)

    def counts_by_shown_status(self) -> dict[str, int]:
        """counts_by_status as people read the statuses (`shown_step_status`): an open wait
        counts as `waiting`, as the step tables show it, not as `running`."""
        grouped = self.order_by().values_list("status", "kind").annotate(n=models.Count("pk"))
        counts: dict[str, int] = {}
        for status, kind, n in grouped:
            shown = shown_step_status(status, kind)
            counts[shown] = counts.get(shown, 0) + n
        return counts

    def completed(self) -> StepQuerySet:
        return self.filter(status=StepStatus.COMPLETED)

    def unfinished(self) -> StepQuerySet:
        return self.filter(status__in=[StepStatus.PENDING, StepStatus.RUNNING])


class Step(models.Model):
    # Derived from (run, position): a replayed insert names the same row (runtime.core.identity).
    id = models.UUIDField(primary_key=True, editable=False)
    # (run, position) is unique and indexed; a separate run_id index would only slow inserts.
    # No database constraint either: see RunQuerySet.delete for what keeps rows with their run.
    run = models.ForeignKey(
        Run, on_delete=models.CASCADE, related_name="step_set", db_index=False, db_constraint=False
    )
    position = models.PositiveIntegerField()
    name = models.CharField(max_length=MAX_NAME_LENGTH)
    kind = models.CharField(max_length=16, choices=choices(StepKind), default=StepKind.STEP)
    status = models.CharField(
        max_length=16, choices=choices(StepStatus), default=StepStatus.PENDING
    )
    attempt = models.PositiveIntegerField(default=0)
    input = PayloadField(null=True, blank=True)
    result = PayloadField(null=True, blank=True)
    error = PayloadField(null=True, blank=True)
    created_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # One meaning: when the runtime must next look at this step, or null if nothing is due.
    # By state: a retry's due time (pending, attempt > 0), a sleep's end, a callback's nearest
    # deadline, a running branch's lease expiry, a released branch's dispatch time (the
    # fan-out sweep republishes it if its message never arrives).
    wake_at = models.DateTimeField(null=True, blank=True)
    # The liveness key of the process running this branch, while it runs (Run.lease_owner).
    lease_owner = models.BigIntegerField(null=True, blank=True, editable=False)
    # The SHA-256 (hex) of the credential a callback's result is posted with
    # (runtime.services.post_callback), never the token itself; null for other steps.
    # Unique through a partial constraint: no index entry (and no LIKE index) for the many
    # ordinary steps that have no token.
    callback_token = models.CharField(max_length=64, null=True, blank=True, editable=False)

    objects = StepQuerySet.as_manager()

    class Meta:
        ordering = ["run", "position"]
        indexes = [
            # The liveness sweep's running branches (runtime.store.lifecycle.liveness): a few rows,
            # however many finished steps the history holds.
            models.Index(
                fields=["lease_owner"],
                name="step_running_owner_idx",
                condition=Q(status="running", lease_owner__isnull=False),
            ),
        ]
        constraints = [
            models.UniqueConstraint(fields=["run", "position"], name="step_unique_position"),
            models.UniqueConstraint(
                fields=["callback_token"],
                condition=Q(callback_token__isnull=False),
                name="step_unique_callback_token",
            ),
            models.CheckConstraint(
                condition=Q(status__in=[s.value for s in StepStatus]), name="step_status_valid"
            ),
        ]

    @property
    def shown_status(self) -> str:
        """The status as people read it: an open wait (ctx.recv, a sleep...) is `waiting`."""
        return shown_step_status(self.status, self.kind)

    def __str__(self) -> str:
        return f"#{self.position} {self.name} ({self.status})"

    @classmethod
    def from_row(cls, run_id: uuid.UUID, row: StepRow) -> Step:
        """The model of a step row as the checkpoint store writes it (`as_row`'s inverse)."""
        return cls(run_id=run_id, **fields_of(row))

    def as_row(self) -> StepRow:
        """This row as the checkpoint store writes it."""
        return StepRow(
            self.id,
            self.position,
            self.name,
            self.kind,
            self.status,
            self.attempt,
            self.created_at,
            input=self.input,
            result=self.result,
            error=self.error,
            started_at=self.started_at,
            finished_at=self.finished_at,
            wake_at=self.wake_at,
            callback_token=self.callback_token,
        )

    @property
    def duration_seconds(self) -> float | None:
        if self.started_at and self.finished_at:
            return (self.finished_at - self.started_at).total_seconds()
        return None


class Event(models.Model):
    id = models.BigAutoField(primary_key=True)
    # Indexed by (run, seq); no database constraint (see RunQuerySet.delete).
    run = models.ForeignKey(
        Run, on_delete=models.CASCADE, related_name="event_set", db_index=False, db_constraint=False
    )
    seq = models.PositiveIntegerField()
    type = models.CharField(max_length=32, choices=choices(EventType))
    # A loose reference: the event log is the source of truth, and every event insert would
    # otherwise pay a constraint check and an index entry. Steps go only with their run.
    step = models.ForeignKey(
        Step,
        on_delete=models.DO_NOTHING,
        null=True,
        blank=True,
        related_name="event_set",
        db_constraint=False,
        db_index=False,
    )
    payload = PayloadField(default=dict)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["run", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["run", "seq"], name="event_unique_seq"),
        ]

    def __str__(self) -> str:
        return f"{self.run_id}#{self.seq} {self.type}"


def fields_of(row: Any) -> dict[str, Any]:
    """A row dataclass's fields by name (slotted dataclasses have no __dict__; asdict copies)."""
    return {f.name: getattr(row, f.name) for f in dataclasses.fields(row)}
