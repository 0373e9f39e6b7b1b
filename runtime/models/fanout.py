"""FanoutGroup: one `ctx.all`, the counters its branches report into."""

from __future__ import annotations

import uuid
from datetime import datetime

from django.db import models
from django.db.models import Q

from runtime.core.identity import group_id
from runtime.core.writes import FanoutGroupRow
from runtime.models.history import fields_of
from runtime.models.runs import Run


class FanoutGroupQuerySet(models.QuerySet["FanoutGroup"]):
    def open(self) -> FanoutGroupQuerySet:
        return self.filter(verdict__isnull=True)


class FanoutGroup(models.Model):
    """One `ctx.all`: its branches are the steps at first_position .. first_position + total - 1.

    Branch completions count themselves here, in their own transaction, so that fan-in never
    reloads the event log; the completion that decides the group settles it and wakes the run.
    """

    # Derived from (run, first_position): a replayed fan-out names the same row.
    id = models.UUIDField(primary_key=True, editable=False)
    # No database constraint, like steps and events (see RunQuerySet.delete).
    run = models.ForeignKey(
        Run, on_delete=models.CASCADE, related_name="fanout_groups", db_constraint=False
    )
    first_position = models.PositiveIntegerField()
    total = models.PositiveIntegerField()
    # Branches allowed to run so far: the max_concurrency window, moved by each completion.
    released = models.PositiveIntegerField()
    succeeded = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    # The rule (runtime.core.fanin.FanInRule): succeed at `need` successes, fail past the limit.
    need = models.PositiveIntegerField(null=True, blank=True)
    failure_limit = models.PositiveIntegerField()
    # Position of the first branch that failed for good, in event-log order.
    first_failure = models.PositiveIntegerField(null=True, blank=True)
    verdict = models.CharField(max_length=16, null=True, blank=True)  # succeeded | failed
    created_at = models.DateTimeField()
    settled_at = models.DateTimeField(null=True, blank=True)
    # When the recovery sweep next looks for lost branch messages and dead branch workers.
    check_at = models.DateTimeField(null=True, blank=True)

    objects = FanoutGroupQuerySet.as_manager()

    class Meta:
        ordering = ["run", "first_position"]
        indexes = [
            models.Index(
                fields=["check_at"], name="fanout_open_check_idx", condition=Q(verdict__isnull=True)
            ),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "first_position"], name="fanout_unique_position"
            ),
            models.CheckConstraint(
                condition=Q(released__lte=models.F("total")), name="fanout_released_within_total"
            ),
            models.CheckConstraint(
                condition=Q(verdict__isnull=True) | Q(verdict__in=["succeeded", "failed"]),
                name="fanout_verdict_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"fan-out {self.run_id}@{self.first_position} ({self.verdict or 'open'})"

    @classmethod
    def from_row(cls, run_id: uuid.UUID, row: FanoutGroupRow, check_at: datetime) -> FanoutGroup:
        """The model of a new group as the checkpoint store records it."""
        return cls(run_id=run_id, check_at=check_at, **fields_of(row))

    def copied_to(self, run_id: uuid.UUID) -> FanoutGroup:
        """This group as a fork of its run starts with it: counts kept, no sweep due."""
        values = {f.attname: getattr(self, f.attname) for f in self._meta.concrete_fields}
        values.update(id=group_id(run_id, self.first_position), run_id=run_id, check_at=None)
        return FanoutGroup(**values)
