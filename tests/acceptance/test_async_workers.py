"""Async steps on real prefork and threads workers: async branches many at a time per worker
process, mixed sync and async, a worker killed mid async fan-out, cancellation, timeouts,
and the loop-lag warning that names a body blocking the loop."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime import start
from runtime.models import Event, Run, Step
from tests.acceptance import async_flows as flows
from tests.support.waiting import wait_until
from tests.support.workers import running_worker

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

WORKER_ENV = {"FANFOLD_WORKFLOW_MODULES": flows.MODULE}


def _completed_once(run_id: Any, n: int) -> None:
    completed = Counter(
        Event.objects.filter(run_id=run_id, type="step_completed").values_list("step", flat=True)
    )
    assert len(completed) == n and set(completed.values()) == {1}
    seqs = list(Event.objects.filter(run_id=run_id).order_by("seq").values_list("seq", flat=True))
    assert seqs == list(range(1, len(seqs) + 1))


@pytest.mark.parametrize(("pool", "concurrency"), [("prefork", 2), ("threads", 4)])
def test_async_workers_run_many_bodies_per_process_and_fan_in(
    counters_redis: Any, pool: str, concurrency: int
) -> None:
    n = 300
    with running_worker(f"async-{pool}", pool, concurrency, **WORKER_ENV):
        handle = start(flows.fan_out, n, 0.5)
        result = handle.wait(timeout=120)
    assert result == {"count": n, "sum": sum(i * i for i in range(n))}
    # Far more bodies at once than pool slots: they share each process's event loop.
    assert int(counters_redis.get(flows.PEAK)) > 5 * concurrency
    _completed_once(handle.id, n)


def test_async_workers_gather_replays_in_call_order_under_random_completion(
    counters_redis: Any,
) -> None:
    with running_worker("async-gather", "prefork", 2, **WORKER_ENV):

        @settings(max_examples=5, deadline=None)
        @given(st.lists(st.sampled_from([0.0, 0.02, 0.05, 0.1]), min_size=2, max_size=6))
        def gather_in_call_order(delays: list[float]) -> None:
            handle = start(flows.gathered, delays)
            n = len(delays)
            assert handle.wait(timeout=60) == [*range(n), *(-i for i in range(n))]
            rows = Step.objects.filter(run_id=handle.id, kind="step").order_by("position")
            assert [r.result for r in rows] == [*range(n), *(-i for i in range(n))]
            _completed_once(handle.id, 2 * n)

        gather_in_call_order()


def test_async_workers_async_orm_inside_branch_bodies(counters_redis: Any) -> None:
    with running_worker("async-orm", "prefork", 2, **WORKER_ENV):
        handle = start(flows.orm_branches, 30)
        result = handle.wait(timeout=60)
    assert result == [f"tests.async_acc.orm_branches:{i}" for i in range(30)]


def test_async_workers_mix_sync_and_async_steps_and_branches(counters_redis: Any) -> None:
    with running_worker("async-mixed", "prefork", 2, **WORKER_ENV):
        handle = start(flows.mixed, 12)
        result = handle.wait(timeout=60)
    assert result == {"first": 1, "second": 9, "branches": 13}
    assert Run.objects.get(id=handle.id).status == "completed"


def test_async_workers_sigkill_mid_async_fan_out_completes_every_branch_once(
    counters_redis: Any,
) -> None:
    n = 200
    with running_worker("async-doomed", "threads", 4, **WORKER_ENV) as doomed:
        handle = start(flows.fan_out, n, 1.0)
        wait_until(
            lambda: int(counters_redis.get(flows.IN_FLIGHT) or 0) >= 50, 60, message="bodies"
        )
        doomed.kill()
    assert counters_redis.llen(flows.BODIES) < n
    with running_worker("async-survivor", "threads", 4, **WORKER_ENV):
        result = handle.wait(timeout=120)
    assert result == {"count": n, "sum": sum(i * i for i in range(n))}
    _completed_once(handle.id, n)
    assert Counter(Step.objects.filter(run_id=handle.id).values_list("status", flat=True)) == {
        "completed": n
    }


def test_async_workers_cancelling_a_run_cancels_its_bodies_in_flight(counters_redis: Any) -> None:
    with running_worker("async-cancel", "prefork", 2, **WORKER_ENV):
        handle = start(flows.hangs, 6)
        wait_until(lambda: counters_redis.llen(flows.BODIES) >= 6, 60, message="bodies to start")
        handle.cancel()
        wait_until(
            lambda: counters_redis.llen(flows.CANCELLED) >= 6, 30, message="bodies cancelled"
        )
    cancelled = sorted(int(i) for i in counters_redis.lrange(flows.CANCELLED, 0, -1))
    assert cancelled == list(range(6))
    assert Run.objects.get(id=handle.id).status == "cancelled"


def test_async_workers_a_timed_out_attempt_retries_by_policy(counters_redis: Any) -> None:
    with running_worker("async-timeouts", "prefork", 2, **WORKER_ENV):
        handle = start(flows.timeouts, 3)
        result = handle.wait(timeout=60)
    assert result == [100, 0, 1, 2]
    assert sorted(int(i) for i in counters_redis.lrange(flows.TIMED_OUT, 0, -1)) == [0, 1, 2, 100]
    failed = Event.objects.filter(run_id=handle.id, type="step_retrying")
    assert {e.payload["error"]["type"] for e in failed} == {"StepTimedOut"}


def test_async_workers_a_body_blocking_the_loop_is_named_in_the_log(counters_redis: Any) -> None:
    with running_worker("async-blocking", "prefork", 2, **WORKER_ENV) as worker:
        handle = start(flows.blocking)
        assert handle.wait(timeout=60) == ["blocked"]
        wait_until(lambda: b"tests.async_acc.blocks_loop" in worker.log_path.read_bytes(), 10,
                   message="the loop-lag warning")  # fmt: skip
