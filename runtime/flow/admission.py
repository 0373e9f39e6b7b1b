"""Admission under `concurrency=N`: which pending runs may start, and when to look again.

A run of a workflow that declares `concurrency` is created unadmitted (its claim fails, so no
worker executes it). `admit(workflow, key)` fills the key's free slots in the database
(runtime.store.flow.admission) and enqueues the admitted runs after commit. It runs when such a run
is started, when one finishes, fails or is cancelled, and on every worker's flow loop as the
backstop for an admission whose process died between the two. Runs of other workflows never
come here: a plain run pays no admission query at all.
"""

from __future__ import annotations

import logging
import uuid

from runtime.core.errors import InvalidArguments
from runtime.dispatch import enqueue_run
from runtime.registry import registry
from runtime.store.flow.admission import admit_next, keys_waiting, release_all, waits_for_slot

log = logging.getLogger("fanfold.admission")


def capacity(workflow: str) -> int | None:
    """The workflow's `concurrency`, or None when it has none (or is not registered here)."""
    wf = registry.workflows.get(workflow)
    return None if wf is None else wf.flow.concurrency


def admit(workflow: str, key: str) -> list[uuid.UUID]:
    """Admit the next pending runs of (workflow, key) into its free slots; their ids."""
    limit = capacity(workflow)
    if limit is None:
        return []
    admitted = admit_next(workflow, key, limit, _enqueue)
    return [run_id for run_id, _ in admitted]


def _enqueue(run_id: uuid.UUID, priority: int) -> None:
    enqueue_run(run_id, priority=priority)


def run_finished(run_id: uuid.UUID, workflow: str) -> None:
    """A run finished, failed or was cancelled: its slot is free, admit who is next.

    Takes the slot lock only when some run of the key is waiting: a start that found the
    slots full committed its run before it looked, so this check sees that run. Never raises:
    the flow loop's backstop admits them later if this fails.
    """
    if capacity(workflow) is None:
        return
    try:
        key = waits_for_slot(run_id, workflow)
        if key is not None:
            admit(workflow, key)
    except Exception:
        log.exception("admission after run %s failed; the flow loop will retry it", run_id)


def admit_waiting() -> int:
    """Admit into every key that has runs waiting and free slots (the backstop); how many.

    Runs of a workflow whose code no longer declares `concurrency` are all let go.
    """
    admitted = 0
    for workflow, key in keys_waiting():
        wf = registry.workflows.get(workflow)
        if wf is not None and wf.flow.concurrency is None:
            admitted += release_all(workflow, _enqueue)
        else:
            admitted += len(admit(workflow, key or ""))
    return admitted


def admission_terms(
    workflow: str, concurrency_key: object, priority: object
) -> tuple[str | None, int]:
    """A start's (concurrency key, priority), checked: the key is "" when the workflow has a
    limit and none was given, None when the workflow has no limit. InvalidArguments if bad."""
    if not isinstance(priority, int) or isinstance(priority, bool) or not 0 <= priority <= 9:
        raise InvalidArguments(f"priority must be an integer from 0 to 9, not {priority!r}")
    if concurrency_key is not None and (
        not isinstance(concurrency_key, str)
        or len(concurrency_key) > 255
        or "\x00" in concurrency_key
    ):
        raise InvalidArguments("concurrency_key must be a string of at most 255 characters")
    if capacity(workflow) is None:
        if concurrency_key is not None:
            raise InvalidArguments(
                f"workflow {workflow!r} declares no concurrency limit, so it takes no "
                "concurrency_key (see @workflow(concurrency=N))"
            )
        return None, priority
    return concurrency_key or "", priority
