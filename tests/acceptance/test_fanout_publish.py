"""Fan-out dispatch against real Redis and real `celery -A config worker` processes.

The fan-out's first execution runs in this process so the publisher's counters (per process)
and the broker's queue can be read right after the dispatch; workers then run the branches
and resume the workflow.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
import redis

from config.celery import app
from publisher import CeleryTransport, Message, Outcome, counters
from runtime import RunHandle
from runtime.core.identity import dispatch_key
from runtime.core.versions import version_queue
from runtime.dispatch import CeleryDispatcher
from runtime.executor import ExecutionOutcome as Execution
from runtime.executor import execute
from runtime.models import Event, Run
from runtime.registry import versions
from runtime.services import start_run
from runtime.testing import InMemoryDispatcher, use_dispatcher, use_writer
from tests.acceptance import fanout_flows as flows
from tests.support.services import queued_lists
from tests.support.workers import running_worker

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.redis_transport]

WORKER_ENV = {"FANFOLD_WORKFLOW_MODULES": flows.MODULE}


@pytest.fixture(autouse=True)
def in_process(counters_redis: Any) -> Iterator[None]:
    with use_writer():
        counters.reset()
        yield
        counters.reset()


def start_quietly(n: int) -> RunHandle:
    """Start a run without its start message: this process executes it first."""
    with use_dispatcher(InMemoryDispatcher()):
        run, _ = start_run(flows.marks, [n])
    return RunHandle(run.id)


def queued_task_ids() -> list[str]:
    """Task ids on the `fanfold` queue (a dispatcher of its own sends there) and on its
    variant of this process's version (the app's dispatcher pins runs to it), in the order
    workers take them: by priority list, and oldest first in each (kombu LPUSHes, workers
    BRPOP)."""
    client = redis.Redis.from_url(app.conf.broker_url)  # the counters may live elsewhere
    plain = app.conf.task_default_queue
    keys = [*queued_lists(plain), *queued_lists(version_queue(plain, versions.current()))]
    raw = [item for key in keys for item in reversed(client.lrange(key, 0, -1))]
    return [json.loads(item)["headers"]["id"] for item in raw]


def expected(n: int) -> dict[str, Any]:
    return {"count": n, "sum": sum(2 * i for i in range(n)), "ordered": True}


def assert_each_step_once(run_id: Any, n: int, client: Any) -> None:
    completed = Counter(
        Event.objects.filter(run_id=run_id, type="step_completed").values_list("step_id", flat=True)
    )
    assert len(completed) == n and set(completed.values()) == {1}
    bodies = Counter(int(i) for i in client.lrange(flows.BODIES, 0, -1))
    assert bodies == Counter(range(n))


def chunk_keys(run_id: Any, n: int, chunk: int) -> list[str]:
    """The idempotency keys of `n` branches sent `chunk` a message, in order."""
    starts = range(1, n + 1, chunk)
    sizes = [min(chunk, n - start + 1) for start in starts]
    return [
        dispatch_key(run_id, start, 1) + (f":n{size}" if size > 1 else "")
        for start, size in zip(starts, sizes, strict=True)
    ]


@pytest.mark.parametrize(
    ("n", "chunk", "sizes"),
    [(64, 1, {64: 1}), (140, 1, {100: 1, 40: 1}), (64, 10, {7: 1}), (1005, 10, {100: 1, 1: 1})],
)
def test_fanout_branches_leave_in_batches_with_keys_and_order_intact(
    counters_redis: Any,
    fanfold_settings: Callable[..., None],
    n: int,
    chunk: int,
    sizes: dict[int, int],
) -> None:
    fanfold_settings(BRANCH_CHUNK=chunk)  # branches a message in this process's first dispatch
    handle = start_quietly(n)
    assert execute(handle.id).outcome is Execution.SUSPENDED
    snapshot = counters.snapshot()
    assert snapshot.batch_sizes == sizes and snapshot.failures == 0
    assert queued_task_ids() == chunk_keys(handle.id, n, chunk)

    with running_worker("fanout-batch", "threads", 8, **WORKER_ENV):
        assert handle.wait(timeout=60) == expected(n)
    assert_each_step_once(handle.id, n, counters_redis)
    assert Run.objects.get(id=handle.id).wakeups == 1


class HalfBroken:
    """The real transport, except that the first batch loses its second half (retryable)."""

    def __init__(self, real: CeleryTransport) -> None:
        self.real = real
        self.batches = 0

    def send(self, message: Message) -> Outcome:
        return self.real.send(message)

    def send_batch(self, messages: Sequence[Message]) -> list[Outcome]:
        self.batches += 1
        if self.batches > 1:
            return self.real.send_batch(messages)
        half = len(messages) // 2
        lost = [Outcome.failure("injected: connection reset", retryable=True)] * (
            len(messages) - half
        )
        return self.real.send_batch(messages[:half]) + lost


@pytest.mark.parametrize(("chunk", "messages"), [(1, 40), (10, 4)])
def test_fanout_partial_publish_failure_then_republish_runs_each_step_once(
    counters_redis: Any, fanfold_settings: Callable[..., None], chunk: int, messages: int
) -> None:
    fanfold_settings(BRANCH_CHUNK=chunk)
    broken = HalfBroken(CeleryTransport(app, batch_size=100))
    handle = start_quietly(40)
    with use_dispatcher(CeleryDispatcher(transport=broken)):
        execution = execute(handle.id)
    assert execution.outcome is Execution.SUSPENDED and execution.wake_at is not None
    assert counters.snapshot().failures == messages // 2
    # Half the branches' messages and the run's retry timer; the retry sends the other half.
    assert len(queued_task_ids()) == messages // 2 + 1

    with running_worker("fanout-partial", "threads", 8, **WORKER_ENV):
        assert handle.wait(timeout=60) == expected(40)
    assert_each_step_once(handle.id, 40, counters_redis)
    assert Run.objects.get(id=handle.id).wakeups == 1  # resumed by exactly one completion
