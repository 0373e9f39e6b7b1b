"""The flow-control tables: schedules, concurrency slots and rate-limit buckets.

Imported by runtime.models so that Django sees them as models of the runtime app.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from runtime.core.identity import MAX_NAME_LENGTH


class Schedule(models.Model):
    """A workflow's schedule, synced from code at start-up; pausable by operators."""

    workflow = models.CharField(max_length=MAX_NAME_LENGTH, unique=True)
    kind = models.CharField(max_length=16)  # cron | interval
    # The cron expression, or the interval in seconds.
    expression = models.CharField(max_length=200)
    timezone = models.CharField(max_length=64, default="UTC")
    catchup = models.CharField(max_length=8, default="skip")
    paused = models.BooleanField(default=False)
    # The newest tick a run was started for (or skipped); ticks after it are still to come.
    last_tick = models.DateTimeField(null=True, blank=True)
    next_tick = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        ordering = ["workflow"]
        constraints = [
            models.CheckConstraint(
                condition=Q(catchup__in=["skip", "latest", "all"]), name="schedule_catchup_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.workflow} ({self.kind} {self.expression})"


class ConcurrencySlot(models.Model):
    """The lock row of one (workflow, concurrency key): admissions take it FOR UPDATE.

    Slots in use are not counted here but from the runs themselves (admitted and active), so a
    run that finishes, fails or is cancelled frees its slot by that very write, and nothing can
    leak a slot.
    """

    workflow = models.CharField(max_length=MAX_NAME_LENGTH)
    key = models.CharField(max_length=255, blank=True, default="")
    capacity = models.PositiveIntegerField()  # the workflow's `concurrency`, as last admitted
    updated_at = models.DateTimeField()

    class Meta:
        ordering = ["workflow", "key"]
        constraints = [
            models.UniqueConstraint(fields=["workflow", "key"], name="slot_unique_key"),
        ]

    def __str__(self) -> str:
        return f"{self.workflow}[{self.key}] capacity {self.capacity}"


class RateBucket(models.Model):
    """A step's global rate limit: the earliest time the next body may start."""

    name = models.CharField(max_length=MAX_NAME_LENGTH, primary_key=True)
    next_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.name} next at {self.next_at}"


class RateReservation(models.Model):
    """The start time handed to one attempt of one step, so a resumed attempt keeps its turn."""

    id = models.BigAutoField(primary_key=True)
    step_id = models.UUIDField()
    attempt = models.PositiveIntegerField()
    at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["step_id", "attempt"], name="rate_unique_attempt"),
        ]
        indexes = [models.Index(fields=["at"], name="rate_reservation_at_idx")]


def admission_indexes(active_states: list[str]) -> list[models.Index]:
    """Run's indexes for admission: the queue of unadmitted runs in admission order, and the
    admitted active runs counted as slots in use."""
    return [
        models.Index(
            "workflow",
            "concurrency_key",
            models.F("priority").desc(),
            "created_at",
            name="run_admission_queue_idx",
            condition=Q(status="pending", admitted=False),
        ),
        models.Index(
            fields=["workflow", "concurrency_key"],
            name="run_slots_in_use_idx",
            condition=Q(admitted=True, concurrency_key__isnull=False, status__in=active_states),
        ),
    ]
