"""Thin Celery tasks: ids in, a service call. Task names are runtime.dispatch's constants."""

from __future__ import annotations

import uuid
from typing import Any

from celery import Task, shared_task
from celery.signals import (
    task_postrun,
    task_prerun,
    worker_init,
    worker_process_init,
    worker_process_shutdown,
    worker_ready,
    worker_shutdown,
)

from publisher.tracing import TRACEPARENT
from runtime import conf, dispatch, executor
from runtime.checks import log_static_collection_problems
from runtime.core.branches import BranchAttempt
from runtime.dispatch import EXECUTE_RUN, EXECUTE_RUNS, RUN_BRANCH
from runtime.eventloop import worker_loop
from runtime.fanout import async_branches, chunk, sweep
from runtime.leases.liveness import release_process_liveness
from runtime.observe.exporter import child_exited, start_worker_exporter
from runtime.recovery import dead_processes, run_sweep
from runtime.store import writer
from runtime.store.connection import close_stale_connections
from runtime.warm import routing
from runtime.warm.cache import warm_runs
from runtime.worker import gc_freeze, housekeeping, prefetch, version_queues
from runtime.worker.run_batch import execute_batch

# How long a warm shutdown waits for async branch bodies in flight before it cancels them.
ASYNC_DRAIN_SECONDS = 10.0
# How long it waits for the run messages its background publisher still holds.
PUBLISH_FLUSH_SECONDS = 10.0

# A run's message and a batch of runs' message: acknowledged after the work, given back if
# the pool process dies, retried with backoff while the database fails under them.
_RUN_TASK_OPTIONS: dict[str, Any] = {
    "acks_late": True,
    "reject_on_worker_lost": True,
    "ignore_result": True,
    "autoretry_for": (Exception,),
    "retry_backoff": True,
    "retry_backoff_max": 30,
    "max_retries": None,
}


@shared_task(name=EXECUTE_RUN, **_RUN_TASK_OPTIONS)
def execute_run(run_id: str, priority: int = 0) -> str:
    """Execute or resume one run; retried with backoff if the database fails under it.
    `priority` is the run's, carried by a start message so that it can join a batch."""
    return executor.execute(uuid.UUID(run_id)).outcome.value


@shared_task(name=EXECUTE_RUNS, **_RUN_TASK_OPTIONS)
def execute_runs(run_ids: list[str], priority: int = 0) -> str:
    """Execute several runs' starts in turn (runtime.worker.run_batch); retried whole with
    backoff if the database fails under one (the finished ones are then skipped)."""
    return execute_batch([uuid.UUID(run_id) for run_id in run_ids], priority)


@shared_task(
    name=RUN_BRANCH, bind=True, acks_late=True, reject_on_worker_lost=True, ignore_result=True
)
def run_branch(
    self: Task,
    run_id: str,
    position: int,
    attempt: int,
    group_position: int,
    poll: int = 0,
    priority: int = 0,
    count: int = 1,
) -> str:
    """Run one attempt of one fan-out branch (runtime.fanout.branch), or of the `count`
    branches from `position` that a chunk carries (runtime.fanout.chunk); a duplicate does
    nothing.

    `priority` is the run's (runtime.dispatch.branch_message). Not retried by Celery: a branch
    whose report could not be written keeps its claim until its lease expires, and the fan-out
    sweep then publishes the next attempt.
    """
    attempt_ = BranchAttempt(
        uuid.UUID(run_id), int(position), int(attempt), int(group_position), int(priority)
    )
    traceparent = self.request.get(TRACEPARENT)  # a message header, set by the publisher
    return chunk.run_message(attempt_, int(count), int(poll), traceparent)


def start_sweeps() -> None:
    """Start this process's sweeps, its takeover pass and its flow loop (schedule ticks,
    admission backstop): each worker runs them; idempotent."""
    run_sweep.loop.start()
    sweep.loop.start()
    dead_processes.loop.start()
    housekeeping.loop.start()


@worker_init.connect
def _consume_own_queues(sender: Any = None, **_: object) -> None:
    """Once the worker's queues are chosen (`-Q`): their variants of the versions it serves,
    and the node's own queue for the runs it keeps parked (runtime.warm.routing)."""
    app = getattr(sender, "app", None)
    if app is not None:
        version_queues.consume_version_queues(app)
        routing.consume_node_queue(sender)


@worker_ready.connect
def _start_sweeps(sender: Any = None, **_: object) -> None:
    pool = getattr(sender, "pool", None)  # the sender is the worker's consumer
    if pool is not None:
        prefetch.make_reconnect_safe(sender.app, pool)
    start_sweeps()
    log_static_collection_problems("Worker")
    if conf.get().GC_FREEZE:
        gc_freeze.freeze_startup_objects(collect=True)
    port = conf.get().METRICS_PORT
    if port:
        start_worker_exporter(port, prefork="prefork" in type(pool).__module__)


@worker_process_init.connect
def _freeze_inherited_objects(**_: object) -> None:
    """A prefork child, before its first task: what it inherited stays out of its collections."""
    if conf.get().GC_FREEZE:
        gc_freeze.freeze_startup_objects(collect=False)


@task_prerun.connect
@task_postrun.connect
def _close_stale_connections(sender: Task | None = None, **_: object) -> None:
    """Around every task, as Django does around every request: a failed or old connection is
    closed, a healthy one kept (runtime.store.connection)."""
    if not getattr(getattr(sender, "request", None), "is_eager", False):
        close_stale_connections()


@worker_process_shutdown.connect
@worker_shutdown.connect
def _drain_checkpoints(pid: int | None = None, **_: object) -> None:
    """A warm shutdown lets the async branch bodies in flight end (ASYNC_DRAIN_SECONDS, then
    they are cancelled and their branches left to the takeover), sends the run messages still
    held by the background publisher, writes what is still queued
    (prefork children and threads pools), then gives up the process's liveness lock (and a
    prefork child's live metrics). The runs it holds warm are let go: they wait in the
    database, as every suspended run does, and their next resumes replay."""
    warm_runs().clear()
    async_branches.drain(ASYNC_DRAIN_SECONDS)
    dispatch.flush(PUBLISH_FLUSH_SECONDS)  # a child leaves by os._exit: no atexit flush
    worker_loop().close()
    writer().close()
    release_process_liveness()
    if pid is not None:
        child_exited(pid)
