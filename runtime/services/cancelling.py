"""Looking runs up and cancelling them (with the runs their fan-outs started)."""

from __future__ import annotations

import uuid
from contextlib import suppress
from typing import Any

from runtime.checkpoint.errors import CheckpointFailed
from runtime.core.clock import current_time
from runtime.core.errors import RunAlreadyFinished, RunNotFound
from runtime.core.identity import as_run_id, child_run_key_prefix
from runtime.core.writes import EventDraft, HistoryWrite, RunPatch, UnfinishedGuard
from runtime.flow.admission import run_finished
from runtime.models import EventType, Run, RunStatus
from runtime.observe import metrics
from runtime.store import write_now
from runtime.store.runs.run_rows import active_runs_keyed_under, run_by_id
from runtime.streaming.wakeups import announce

Actor = dict[str, Any]  # who acted, as recorded in events: runtime.access.actors.actor_of


def with_actor(payload: dict[str, Any], by: Actor | None) -> dict[str, Any]:
    """An event payload with `by` (who acted: runtime.access.actors.actor_of) when known.

    Operator actions (cancel, fork, retry, callback posts, messages and signals sent through
    the API) add it to the event they record, so the run's log says who did what.
    """
    return payload if by is None else {**payload, "by": by}


def get_run_row(run_id: uuid.UUID | str) -> Run:
    """The run's row; RunNotFound for an unknown run or a malformed id."""
    rid = as_run_id(run_id)
    run = run_by_id(rid)
    if run is None:
        raise RunNotFound(f"no run {rid}")
    return run


def cancel_run(
    run_id: uuid.UUID | str, reason: str = "cancelled", *, by: Actor | None = None
) -> Run:
    """Cancel a run that has not finished; raises RunAlreadyFinished otherwise.

    `by` (runtime.access.actors.actor_of) names the user who cancelled, in the event.
    No new step starts after this commits: the executor's next checkpoint finds its lease gone.
    Sleeping or waiting runs stop at once; a running step may finish, but its result is unused.
    Child runs started by the run's fan-outs are cancelled with it.
    """
    run = get_run_row(run_id)
    now = current_time()
    write = HistoryWrite(
        run.id,
        UnfinishedGuard(),
        (EventDraft(EventType.RUN_CANCELLED, now, None, with_actor({"reason": reason}, by)),),
        run=RunPatch(status=RunStatus.CANCELLED, finished_at=now, wake_at=None, release_lease=True),
        cancel_open_steps=True,
    )
    try:
        write_now(write, session=f"cancel/{run.id}/{uuid.uuid4().hex}", size=256)
    except CheckpointFailed as failure:
        if isinstance(failure.__cause__, RunAlreadyFinished):
            raise failure.__cause__ from None
        raise
    metrics.run_finished(run.workflow, RunStatus.CANCELLED)
    announce(run.id)
    _cancel_children(run.id, run.owner_id)
    run_finished(run.id, run.workflow)  # its slot, if it held one, is free
    run.refresh_from_db()
    return run


def _cancel_children(run_id: uuid.UUID, owner_id: int | None) -> None:
    # Children have their parent's owner: a run of anyone else never counts as a child.
    for child_id in active_runs_keyed_under(owner_id, child_run_key_prefix(run_id)):
        with suppress(RunAlreadyFinished):  # a child that finished meanwhile needs no stop
            cancel_run(child_id, reason=f"parent run {run_id} was cancelled")
