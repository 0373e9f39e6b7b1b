"""The store's own floor for sequential steps: a step's write through the sink, nothing else.

`bench seq` compares a run with the bare commit rate; this sits between the two. It writes
what one no-op step writes (its row, step_created, step_started and step_completed, the
guarded run update) straight through `DatabaseSink`, one commit per step, on a synthetic run
that no worker sees (it holds a lease that does not expire, and is deleted afterwards).
"""

from __future__ import annotations

import time
import uuid
from datetime import timedelta

from django.db import connection
from django.utils import timezone

from runtime.checkpoint.batching import Checkpoint
from runtime.core.identity import step_id
from runtime.core.writes import EventDraft, HistoryWrite, LeaseGuard, StepRow, step_created
from runtime.models import Run, RunStatus
from runtime.store.history.sink import DatabaseSink

LEASE_TOKEN = "bench-sink-floor"


def noop_step_write(run_id: uuid.UUID, position: int, token: str = LEASE_TOKEN) -> HistoryWrite:
    """What one no-op step of a run leased with `token` writes when it completes."""
    now = timezone.now()
    sid = step_id(run_id, position)
    step_input = {"args": [position], "kwargs": {}}
    row = StepRow(
        sid, position, "examples.noop", "step", "completed", 1, now,
        input=step_input, result=position, started_at=now, finished_at=now,
    )  # fmt: skip
    events = (
        step_created(sid, position, "examples.noop", "step", step_input, now),
        EventDraft("step_started", now, sid, {"attempt": 1}),
        EventDraft("step_completed", now, sid, {"attempt": 1, "result": position}),
    )
    return HistoryWrite(run_id, LeaseGuard(token), events, (row,))


def sink_steps_per_second(samples: int = 1000) -> float | None:
    """No-op step writes per second through the sink, one transaction each (PostgreSQL only)."""
    if connection.vendor != "postgresql":
        return None
    now = timezone.now()
    run = Run.objects.create(
        workflow="bench.sink_floor",
        status=RunStatus.RUNNING,
        created_at=now,
        updated_at=now,
        lease_token=LEASE_TOKEN,
        lease_expires_at=now + timedelta(days=1),
    )
    sink = DatabaseSink()
    try:
        started = time.perf_counter()
        for position in range(1, samples + 1):
            write = noop_step_write(run.id, position)
            sink.write_batch([Checkpoint(session="floor", payload=write, size=1024, sync=True)])
        return samples / (time.perf_counter() - started)
    finally:
        sink.close()
        run.delete()
