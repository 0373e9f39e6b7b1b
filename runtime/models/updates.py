"""Updates (contract section 2l): a caller's request to a run, and the run's answer.

Like messages, the rows reference their run without a database constraint and go with it when
it is deleted (RunQuerySet.delete cascades through the ORM).
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from runtime.core.identity import MAX_IDEMPOTENCY_KEY_LENGTH, MAX_NAME_LENGTH
from runtime.models.payloads import PayloadField


class UpdateStatus(models.TextChoices):
    PENDING = "pending"
    REPLIED = "replied"
    REJECTED = "rejected"


class RunUpdate(models.Model):
    """An accepted update: taken by one `ctx.next_update` (in arrival order), answered once."""

    id = models.BigAutoField(primary_key=True)
    run = models.ForeignKey(
        "runtime.Run",
        on_delete=models.CASCADE,
        related_name="updates",
        db_index=False,
        db_constraint=False,
    )
    # The caller's id for it (or one made up): a repeated id applies once.
    update_id = models.CharField(max_length=MAX_IDEMPOTENCY_KEY_LENGTH)
    name = models.CharField(max_length=MAX_NAME_LENGTH)
    payload = PayloadField(null=True)
    status = models.CharField(
        max_length=16, choices=UpdateStatus.choices, default=UpdateStatus.PENDING
    )
    reply = PayloadField(null=True)
    reason = models.TextField(null=True, blank=True)
    # Who sent it through the API ({"user_id", "username"}): its `update_received` says so.
    sent_by = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField()
    # The position of the `ctx.next_update` that took it (a retried wait finds it again) and
    # of the reply or rejection that answered it.
    received_position = models.PositiveIntegerField(null=True, blank=True)
    received_at = models.DateTimeField(null=True, blank=True)
    answered_position = models.PositiveIntegerField(null=True, blank=True)
    answered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run", "id"]
        indexes = [
            models.Index(
                fields=["run", "id"],
                name="update_unreceived_idx",
                condition=Q(received_position__isnull=True),
            ),
        ]
        constraints = [
            models.UniqueConstraint(fields=["run", "update_id"], name="update_unique_id"),
            models.UniqueConstraint(
                fields=["run", "received_position"],
                condition=Q(received_position__isnull=False),
                name="update_unique_receipt",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.run_id}/{self.name}#{self.update_id}"
