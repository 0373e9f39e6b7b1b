"""Thin Celery tasks: ids in, a service call."""

from __future__ import annotations

import uuid

from celery import shared_task
from celery.signals import worker_process_shutdown, worker_ready, worker_shutdown

from runtime import executor, sweep


@shared_task(
    name="fanfold.execute_run",
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
    autoretry_for=(Exception,),
    retry_backoff=True,
    retry_backoff_max=30,
    max_retries=None,
)
def execute_run(run_id: str) -> str:
    """Execute or resume one run; retried with backoff if the database fails under it."""
    return executor.execute(uuid.UUID(run_id)).outcome.value


@shared_task(name="fanfold.sweep", ignore_result=True)
def sweep_runs() -> int:
    """Re-enqueue overdue timers and runs whose owner stopped heartbeating."""
    return sweep.sweep_once()


@worker_ready.connect
def _start_sweeper(**_: object) -> None:
    sweep.start_sweeper()


@worker_process_shutdown.connect
@worker_shutdown.connect
def _drain_checkpoints(**_: object) -> None:
    """A warm shutdown writes what is still queued (prefork children and threads pools)."""
    from runtime.store import writer

    writer().close()


@shared_task(
    name="fanfold.run_branch", acks_late=True, reject_on_worker_lost=True, ignore_result=True
)
def run_branch(run_id: str, position: int, attempt: int, group_first: int, poll: int = 0) -> str:
    """Run one attempt of one fan-out branch (runtime.branches); a duplicate does nothing.

    Not retried by Celery: a branch whose report could not be written keeps its claim until
    its lease expires, and the fan-out sweep then publishes the next attempt.
    """
    from runtime import branches

    return branches.run_branch(
        uuid.UUID(run_id), int(position), int(attempt), int(group_first), int(poll)
    )


@worker_ready.connect
def _start_fanout_sweeper(**_: object) -> None:
    from runtime.fanout_sweep import start_fanout_sweeper

    start_fanout_sweeper()
