"""What a pass writes on the run itself: that it started (or resumed), and how it ended."""

from __future__ import annotations

from datetime import datetime
from functools import partial
from typing import Any

from runtime.core.clock import Clock
from runtime.core.states import EventType
from runtime.core.writes import EventDraft, HistoryWrite, RunPatch
from runtime.durable import run_ends
from runtime.durable.session import ExecutionSession
from runtime.models import RunStatus
from runtime.observe import metrics
from runtime.process.identity import worker_id
from runtime.streaming.wakeups import signal_local


def announce_start(session: ExecutionSession, status: str, workflow: str, now: datetime) -> None:
    """A pending run starts (`run_started`); a waiting one runs again."""
    if status == RunStatus.PENDING:
        metrics.run_started(workflow)
        started = EventDraft(EventType.RUN_STARTED, now, payload={"worker": worker_id()})
        events: tuple[EventDraft, ...] = (started,)
        patch = RunPatch(status=RunStatus.RUNNING, started_at=now, wake_at=None)
    elif status == RunStatus.WAITING:
        events, patch = (), RunPatch(status=RunStatus.RUNNING, wake_at=None)
    else:
        return
    session.checkpoint(HistoryWrite(session.run_id, session.guard, events, run=patch), sync=False)


def settle(
    session: ExecutionSession,
    clock: Clock,
    event: str,
    status: RunStatus,
    *,
    result: Any = None,
    error: dict[str, Any] | None = None,
    size: int = 0,
) -> None:
    """End the run with `event`: its result or error, its lease given back."""
    now = clock.now()
    payload = {"result": result} if status == RunStatus.COMPLETED else {"error": error}
    patch = RunPatch(
        status=status,
        result=result,
        error=error,
        finished_at=now,
        wake_at=None,
        release_lease=True,
    )
    # Stream readers and RunHandle.wait() learn of it at once: other processes by a
    # notification that leaves with the commit, this one's here.
    events = (EventDraft(event, now, None, payload),)
    write = HistoryWrite(session.run_id, session.guard, events, run=patch, announce=True)
    ends = run_ends.current()
    session.checkpoint(write, sync=ends is None, payload_bytes=size)
    if ends is None:
        signal_local(session.run_id)
    else:
        ends.queued(session, partial(signal_local, session.run_id))
