"""Messages, values and signals between runs (runtime.messaging).

Like steps and events, these rows reference their run without a database constraint and go
with it when it is deleted (RunQuerySet.delete cascades through the ORM).
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from runtime.core.identity import MAX_IDEMPOTENCY_KEY_LENGTH, MAX_NAME_LENGTH
from runtime.models.payloads import PayloadField

_HASH_LENGTH = 64  # a sha256 hex digest (runtime.core.matching)


def _run_reference(related_name: str) -> models.ForeignKey[object, object]:
    return models.ForeignKey(
        "runtime.Run",
        on_delete=models.CASCADE,
        related_name=related_name,
        db_index=False,
        db_constraint=False,
    )


class Message(models.Model):
    """A JSON value sent to one run's mailbox under a topic; received once, in send order."""

    id = models.BigAutoField(primary_key=True)
    run = _run_reference("messages")
    topic = models.CharField(max_length=MAX_NAME_LENGTH)
    value = PayloadField(null=True)
    idempotency_key = models.CharField(max_length=MAX_IDEMPOTENCY_KEY_LENGTH, null=True, blank=True)
    # A send made by workflow code: the sending run and position (sent once however often
    # the sender replays).
    source_run = models.UUIDField(null=True, blank=True)
    source_position = models.PositiveIntegerField(null=True, blank=True)
    # Who sent it through the API ({"user_id", "username"}): its `message_received` says so.
    sent_by = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField()
    # The position of the `ctx.recv` that took it (a retried recv finds its message again).
    received_position = models.PositiveIntegerField(null=True, blank=True)
    received_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run", "id"]
        indexes = [
            models.Index(
                fields=["run", "topic", "id"],
                name="message_unreceived_idx",
                condition=Q(received_position__isnull=True),
            ),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "idempotency_key"],
                condition=Q(idempotency_key__isnull=False),
                name="message_unique_idempotency_key",
            ),
            models.UniqueConstraint(
                fields=["source_run", "source_position"],
                condition=Q(source_run__isnull=False),
                name="message_unique_source",
            ),
            models.UniqueConstraint(
                fields=["run", "received_position"],
                condition=Q(received_position__isnull=False),
                name="message_unique_receipt",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.run_id}/{self.topic}#{self.id}"


class RunValue(models.Model):
    """The latest value a run set under a key (`ctx.set_value`)."""

    id = models.BigAutoField(primary_key=True)
    run = _run_reference("values")
    key = models.CharField(max_length=MAX_NAME_LENGTH)
    value = PayloadField(null=True)
    # The workflow position that set it: a replayed older set never overwrites a newer one.
    position = models.PositiveIntegerField()
    updated_at = models.DateTimeField()

    class Meta:
        ordering = ["run", "key"]
        constraints = [
            models.UniqueConstraint(fields=["run", "key"], name="run_value_unique_key"),
        ]

    def __str__(self) -> str:
        return f"{self.run_id}/{self.key}"


class Signal(models.Model):
    """A named JSON payload emitted to every run waiting for it; kept for a retention time."""

    id = models.BigAutoField(primary_key=True)
    name = models.CharField(max_length=MAX_NAME_LENGTH)
    payload = models.JSONField(null=True)
    idempotency_key = models.CharField(max_length=MAX_IDEMPOTENCY_KEY_LENGTH, null=True, blank=True)
    # Who emitted it through the API: every `signal_received` it causes says so.
    emitted_by = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["name", "created_at"], name="signal_name_time_idx"),
            models.Index(fields=["created_at"], name="signal_time_idx"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["name", "idempotency_key"],
                condition=Q(idempotency_key__isnull=False),
                name="signal_unique_idempotency_key",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name}#{self.id}"


class SignalKeyset(models.Model):
    """One set of match keys that waits for a signal name use: an emit looks up each."""

    key = models.CharField(max_length=_HASH_LENGTH, primary_key=True)
    name = models.CharField(max_length=MAX_NAME_LENGTH, db_index=True)
    keys = models.JSONField(default=list)
    created_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.name} by {self.keys}"


class SignalWait(models.Model):
    """A run waiting at a position for a signal whose payload satisfies `match`."""

    id = models.BigAutoField(primary_key=True)
    run = _run_reference("signal_waits")
    position = models.PositiveIntegerField()
    name = models.CharField(max_length=MAX_NAME_LENGTH)
    match = models.JSONField(default=dict)
    match_key = models.CharField(max_length=_HASH_LENGTH)
    # Signals emitted from then on count: the wait's start minus its lookback.
    accepts_from = models.DateTimeField()
    created_at = models.DateTimeField()
    # Set once: when a signal was delivered to it, or when it timed out.
    closed_at = models.DateTimeField(null=True, blank=True)
    signal_id = models.BigIntegerField(null=True, blank=True)
    payload = models.JSONField(null=True, blank=True)  # the signal's, kept past its retention

    class Meta:
        ordering = ["run", "position"]
        indexes = [
            models.Index(
                fields=["match_key"],
                name="signal_wait_open_idx",
                condition=Q(closed_at__isnull=True),
            ),
        ]
        constraints = [
            models.UniqueConstraint(fields=["run", "position"], name="signal_wait_unique_position"),
        ]

    def __str__(self) -> str:
        return f"{self.run_id}#{self.position} waits for {self.name}"
