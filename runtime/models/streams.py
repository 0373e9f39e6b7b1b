"""StreamChunk: one value a run wrote to one of its named streams (runtime.streaming).

Kept out of runtime/models.py so the stream's model can grow on its own; models.py imports it,
so Django finds it like any other model of the app.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from runtime.core.identity import MAX_NAME_LENGTH
from runtime.models.payloads import PayloadField

# A workflow's write is keyed by where it happened in the workflow, so that replaying the
# workflow does not write it again: "<position>:<n>" (see runtime.streaming.writer).
MAX_WRITER_KEY_LENGTH = 64


class StreamChunk(models.Model):
    id = models.BigAutoField(primary_key=True)
    # Indexed by (run, stream, seq); no database constraint, like steps and events: chunks go
    # with their run (RunQuerySet.delete cascades through the ORM).
    run = models.ForeignKey(
        "runtime.Run",
        on_delete=models.CASCADE,
        related_name="stream_chunks",
        db_index=False,
        db_constraint=False,
    )
    stream = models.CharField(max_length=MAX_NAME_LENGTH)
    # Dense per (run, stream), from 1: a reader resumes after the last seq it saw.
    seq = models.PositiveIntegerField()
    value = PayloadField(null=True)
    writer_key = models.CharField(max_length=MAX_WRITER_KEY_LENGTH, null=True, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["run", "stream", "seq"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "stream", "seq"], name="stream_chunk_unique_seq"
            ),
            models.UniqueConstraint(
                fields=["run", "stream", "writer_key"],
                condition=Q(writer_key__isnull=False),
                name="stream_chunk_unique_writer_key",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.run_id}/{self.stream}#{self.seq}"
