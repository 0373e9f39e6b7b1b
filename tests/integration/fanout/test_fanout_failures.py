"""Fan-out failure rules, branch retries and publish failures, on PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable

from fanout_harness import Branches
from fanout_workflows import FAIL, calls, completed_once, statuses

from publisher.fake import FakeTransport
from runtime.core.identity import dispatch_key
from runtime.executor import ExecutionOutcome, execute
from runtime.models import Event, FanoutGroup, Run
from runtime.services import start_run
from tests.support.dispatch import Enqueued, Later


def test_fanout_failure_fails_fast_and_dispatches_nothing_after_the_decision(
    fake: FakeTransport, branches: Branches
) -> None:
    FAIL.add(2)
    run, _ = start_run("tests.fanout.squares", [8], {"max_concurrency": 1})
    execute(run.id)
    branches.drain(threads=1)
    assert len(fake.delivered) == 3  # 0, 1, then 2 failed: 3..7 never left
    assert execute(run.id).outcome is ExecutionOutcome.FAILED
    error = Run.objects.get(id=run.id).error
    assert error["type"] == "StepFailed" and error["cause_type"] == "FatalError"
    assert error["step"] == "tests.fanout.square"
    assert statuses(run.id) == {"completed": 2, "failed": 1, "cancelled": 5}
    assert FanoutGroup.objects.get(run_id=run.id).verdict == "failed"


def test_fanout_return_exceptions_puts_failed_branches_in_place(branches: Branches) -> None:
    FAIL.update({1, 3})
    run, _ = start_run("tests.fanout.squares", [5], {"return_exceptions": True})
    execute(run.id)
    branches.drain()
    assert execute(run.id).outcome is ExecutionOutcome.COMPLETED
    assert Run.objects.get(id=run.id).result == [0, {"failed": 2}, 4, {"failed": 4}, 16]


def test_fanout_min_successful_ends_early_and_cancels_the_rest(
    fake: FakeTransport, branches: Branches, enqueued: Enqueued
) -> None:
    run, _ = start_run("tests.fanout.squares", [10], {"min_successful": 3, "max_concurrency": 2})
    execute(run.id)
    branches.drain(threads=2)
    assert statuses(run.id)["completed"] == 3
    assert statuses(run.id)["cancelled"] == 7
    assert len(fake.delivered) <= 4  # 2, then one release per completion before the third
    assert enqueued.count(run.id) == 2
    execute(run.id)
    result = Run.objects.get(id=run.id).result
    done = [(i, v) for i, v in enumerate(result) if isinstance(v, int)]
    assert len(done) == 3 and all(v == i * i for i, v in done)
    assert all(v == {"failed": i + 1} for i, v in enumerate(result) if not isinstance(v, int))


def test_fanout_tolerated_failures_fails_past_the_count(branches: Branches) -> None:
    FAIL.update({0, 1})
    run, _ = start_run("tests.fanout.squares", [6], {"tolerated_failures": 1})
    execute(run.id)
    branches.drain(threads=1)
    assert execute(run.id).outcome is ExecutionOutcome.FAILED
    first_failed = Event.objects.filter(run_id=run.id, type="step_failed").order_by("seq").first()
    assert first_failed is not None
    group = FanoutGroup.objects.get(run_id=run.id)
    assert first_failed.step is not None and group.first_failure == first_failed.step.position
    assert Run.objects.get(id=run.id).error["step"] == "tests.fanout.square"


def test_fanout_branch_retry_republishes_the_next_attempt_with_its_delay(
    branches: Branches, later: Later
) -> None:
    run, _ = start_run("tests.fanout.flakies", [4])
    execute(run.id)
    branches.drain()
    assert sorted((c[2], c[3], c[4]) for c in later.calls) == [(p, 2, 0.5) for p in range(1, 5)]
    assert statuses(run.id) == {"pending": 4}
    branches.deliver_later()
    execute(run.id)
    assert Run.objects.get(id=run.id).result == [0, 1, 2, 3]
    retrying = Event.objects.filter(run_id=run.id, type="step_retrying").count()
    assert retrying == 4 and set(completed_once(run.id).values()) == {1}


def test_fanout_retryable_publish_failure_republishes_the_set_on_replay(
    fake: FakeTransport, branches: Branches, enqueued: Enqueued
) -> None:
    fake.fail_next_request()  # a whole request fails: retryable
    run, _ = start_run("tests.fanout.squares", [6])
    execution = execute(run.id)
    assert execution.outcome is ExecutionOutcome.SUSPENDED and execution.wake_at is not None
    assert fake.delivered == []
    assert execute(run.id).outcome is ExecutionOutcome.SUSPENDED  # replay republishes all six
    assert [m.idempotency_key for m in fake.delivered] == [
        dispatch_key(run.id, p, 1) for p in range(1, 7)
    ]
    branches.drain(times=2)
    assert execute(run.id).outcome is ExecutionOutcome.COMPLETED
    assert sorted(calls.counts.values()) == [1] * 6
    assert set(completed_once(run.id).values()) == {1}


def test_fanout_permanent_publish_failure_fails_the_run_promptly(
    fanfold_settings: Callable[..., None], fake: FakeTransport, branches: Branches
) -> None:
    fanfold_settings(BRANCH_CHUNK=10)
    run, _ = start_run("tests.fanout.squares", [23])
    fake.fail_messages(dispatch_key(run.id, 11, 1) + ":n10", retryable=False)  # the 2nd chunk
    assert execute(run.id).outcome is ExecutionOutcome.FAILED
    error = Run.objects.get(id=run.id).error
    assert error["type"] == "PublishError" and "1 of 3" in error["message"]
    branches.drain()  # the two chunks that left find the run finished
    assert calls.counts == {}
