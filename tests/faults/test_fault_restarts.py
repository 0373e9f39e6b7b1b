"""Redis, RabbitMQ and PostgreSQL restarted under running workflows: each run completes, every
step has exactly one completion, the at-most-once step ran once, and recovery is printed.

Redis keeps nothing on disk here, so its restart loses every queued message (start and timer
messages, branch messages): the sweeps find what was lost. kombu's Redis transport ends the
worker ("Unrecoverable error") when the connection drops while it holds unacknowledged
messages, so the worker runs supervised, started again when it exits, as systemd's
Restart=always does in a deployment; the new worker takes the run over. RabbitMQ keeps its
durable queue and persistent messages. A PostgreSQL restart fails the checkpoints in flight:
the execution task retries and replays.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from runtime import RunHandle, start
from runtime.testing import InMemoryDispatcher, use_dispatcher
from tests.faults import fault_workflows as flows
from tests.faults.fault_checks import assert_each_step_completed_once, wait_for
from tests.support.workers import running_worker, supervised_worker

ENV = {"FANFOLD_WORKFLOW_MODULES": flows.MODULE}
STEPS = 120  # the fault lands after 40 (the bodies are held meanwhile), 80 are left


def _faulted(
    counters: Any,
    key: str,
    at: int,
    fault: Callable[[], None],
    handle: RunHandle,
    what: str,
    in_flight: int,
) -> tuple[Any, float, float]:
    """Inject `fault` once `at` bodies ran, holding the bodies meanwhile; returns the result,
    the seconds from the service's return until a body begun after it ran, and until the run
    finished.

    Up to `in_flight` bodies (the worker's concurrency, one for a sequential run) may have been
    running through the fault and finish after it: they do not count as recovery.
    """
    wait_for(lambda: counters.llen(key) >= at, 120, f"{what} to get going")
    counters.set(flows.HOLD, 1)  # the run cannot finish before the fault lands
    try:
        fault()
    finally:
        counters.delete(flows.HOLD)
    after = counters.llen(key) + in_flight
    began = time.monotonic()
    recovered = wait_for(lambda: counters.llen(key) > after, 120, f"{what} to go on")
    result = handle.wait(timeout=180)
    return result, recovered, time.monotonic() - began


def _report(what: str, recovered: float, finished: float) -> None:
    print(
        f"\n{what}: recovered in {recovered:.2f} s (a body begun after the restart ran), "
        f"finished {finished:.1f} s after the restart"
    )


def test_fault_redis_restart_mid_sequential_run(
    counters_redis: Any, restart_redis: Callable[[], None]
) -> None:
    with supervised_worker("fault-redis-seq", "threads", 4, **ENV) as workers:
        handle = start(flows.steady, STEPS)
        result, recovered, finished = _faulted(
            counters_redis, flows.TICKS, 40, restart_redis, handle, "the sequential run", 1
        )
    _report(
        f"Redis restarted mid sequential run ({len(workers)} worker starts)", recovered, finished
    )
    assert result == sum(range(STEPS))
    assert_each_step_completed_once(handle.id)
    assert counters_redis.lrange(flows.CHARGES, 0, -1) == [b"steady"]


def test_fault_redis_restart_mid_fanout(
    counters_redis: Any, restart_redis: Callable[[], None]
) -> None:
    with supervised_worker("fault-redis-fan", "threads", 8, **ENV) as workers:
        handle = start(flows.wide, 500)
        result, recovered, finished = _faulted(
            counters_redis, flows.LEAVES, 100, restart_redis, handle, "the fan-out", 8
        )
    _report(f"Redis restarted mid fan-out ({len(workers)} worker starts)", recovered, finished)
    assert result == sum(range(500))
    assert_each_step_completed_once(handle.id)
    assert counters_redis.lrange(flows.CHARGES, 0, -1) == [b"wide"]


def test_fault_postgres_restart_mid_run(
    counters_redis: Any, restart_postgres: Callable[[], None]
) -> None:
    with running_worker("fault-pg", "threads", 4, **ENV):
        handle = start(flows.steady, STEPS)
        result, recovered, finished = _faulted(
            counters_redis, flows.TICKS, 40, restart_postgres, handle, "the run", 1
        )
    _report("PostgreSQL restarted mid run", recovered, finished)
    assert result == sum(range(STEPS))
    assert_each_step_completed_once(handle.id)
    assert counters_redis.lrange(flows.CHARGES, 0, -1) == [b"steady"]


@pytest.mark.parametrize(("workflow", "arg", "key", "in_flight"), [
    (flows.steady, STEPS, flows.TICKS, 1),
    (flows.wide, 500, flows.LEAVES, 8),
])  # fmt: skip
def test_fault_pgbouncer_restart_mid_run(
    counters_redis: Any,
    restart_pgbouncer: Callable[[], None],
    workflow: Any,
    arg: int,
    key: str,
    in_flight: int,
) -> None:
    # Every pooled connection (the worker's tasks, its checkpoint writer, its lease renewals,
    # this process) is cut; PgBouncer is back well within a lease (no liveness lock behind a
    # pooler by default), so the run's lease stays with its worker.
    with running_worker("fault-pgbouncer", "threads", 8, **ENV):
        handle = start(workflow, arg)
        result, recovered, finished = _faulted(
            counters_redis, key, 40, restart_pgbouncer, handle, "the run", in_flight
        )
    _report(f"PgBouncer restarted mid {workflow.name}", recovered, finished)
    assert result == sum(range(arg))
    assert_each_step_completed_once(handle.id)
    assert len(counters_redis.lrange(flows.CHARGES, 0, -1)) == 1


@pytest.mark.parametrize(("workflow", "arg", "key", "in_flight"), [
    (flows.steady, STEPS, flows.TICKS, 1),
    (flows.wide, 500, flows.LEAVES, 8),
])  # fmt: skip
def test_fault_rabbitmq_restart_mid_run(
    counters_redis: Any,
    amqp_url: str,
    restart_rabbitmq: Callable[[], None],
    workflow: Any,
    arg: int,
    key: str,
    in_flight: int,
) -> None:
    # The worker's broker is RabbitMQ; this process sends nothing: the worker's sweep takes the
    # new run from the database and sends its start through RabbitMQ.
    with running_worker("fault-amqp", "threads", 8, CELERY_BROKER_URL=amqp_url, **ENV):
        with use_dispatcher(InMemoryDispatcher()):
            handle = start(workflow, arg)
        result, recovered, finished = _faulted(
            counters_redis, key, 40, restart_rabbitmq, handle, "the run on RabbitMQ", in_flight
        )
    _report(f"RabbitMQ restarted mid {workflow.name}", recovered, finished)
    assert result == sum(range(arg))
    assert_each_step_completed_once(handle.id)
    assert len(counters_redis.lrange(flows.CHARGES, 0, -1)) == 1
