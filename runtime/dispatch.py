"""Sending work to Celery workers: the run-execution message and its timers."""

from __future__ import annotations

import uuid

from runtime import embedded


def enqueue_run(run_id: uuid.UUID, countdown: float | None = None) -> None:
    """Ask a worker to execute (or resume) `run_id`, now or after `countdown` seconds.

    Duplicates are harmless: an execution that finds the lease taken or the run finished
    does nothing.
    """
    from runtime.tasks import execute_run

    embedded.ensure_worker()
    if countdown:
        execute_run.apply_async((str(run_id),), countdown=countdown)
    else:
        execute_run.apply_async((str(run_id),))
