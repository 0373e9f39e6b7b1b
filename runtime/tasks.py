"""Thin Celery tasks: ids in, a service call. Task names are runtime.dispatch's constants."""

from __future__ import annotations

import uuid

from celery import shared_task
from celery.signals import worker_process_shutdown, worker_ready, worker_shutdown

from runtime import executor
from runtime.dispatch import EXECUTE_RUN, RUN_BRANCH
from runtime.fanout import branch, sweep
from runtime.fanout.report import BranchAttempt
from runtime.flow import loop as flow_loop
from runtime.recovery import run_sweep
from runtime.store import writer


@shared_task(
    name=EXECUTE_RUN,
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


@shared_task(name=RUN_BRANCH, acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def run_branch(run_id: str, position: int, attempt: int, group_position: int, poll: int = 0) -> str:
    """Run one attempt of one fan-out branch (runtime.fanout.branch); a duplicate does nothing.

    Not retried by Celery: a branch whose report could not be written keeps its claim until
    its lease expires, and the fan-out sweep then publishes the next attempt.
    """
    attempt_ = BranchAttempt(uuid.UUID(run_id), int(position), int(attempt), int(group_position))
    return branch.run_branch(attempt_, int(poll))


@shared_task(name="fanfold.sweep", ignore_result=True)
def sweep_runs() -> int:
    """Re-enqueue overdue timers and runs whose owner stopped heartbeating."""
    return run_sweep.sweep_once()


def start_sweeps() -> None:
    """Start this process's run and fan-out sweeps and its flow loop (schedule ticks,
    admission backstop): each worker runs them; idempotent."""
    run_sweep.loop.start()
    sweep.loop.start()
    flow_loop.loop.start()


@worker_ready.connect
def _start_sweeps(**_: object) -> None:
    start_sweeps()


@worker_process_shutdown.connect
@worker_shutdown.connect
def _drain_checkpoints(**_: object) -> None:
    """A warm shutdown writes what is still queued (prefork children and threads pools)."""
    writer().close()
