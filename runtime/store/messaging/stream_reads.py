"""What a stream's reader asks the database: whether the run has finished, and the chunks
after a seq."""

from __future__ import annotations

import uuid
from typing import Any

from runtime.models import FINISHED_RUN_STATES, Run, StreamChunk


def run_finished(run_id: uuid.UUID) -> bool:
    """True if the run has finished (or no longer exists)."""
    status = Run.objects.filter(id=run_id).values_list("status", flat=True).first()
    return status is None or status in FINISHED_RUN_STATES


def chunks_after(run_id: uuid.UUID, stream: str, after: int, limit: int) -> list[tuple[int, Any]]:
    """(seq, value) of the stream's chunks after `after`, in seq order, at most `limit`."""
    rows = (
        StreamChunk.objects.filter(run_id=run_id, stream=stream, seq__gt=after)
        .order_by("seq")
        .values_list("seq", "value")[:limit]
    )
    return list(rows)
