"""ctx.all / ctx.map on PostgreSQL: one batch in, branches on many threads, one resume out."""

from __future__ import annotations

from fanout_harness import Branches
from fanout_workflows import calls, completed_once, statuses

from publisher.fake import FakeTransport
from runtime.core.identity import dispatch_key
from runtime.executor import ExecutionOutcome, execute
from runtime.models import Event, FanoutGroup, Run, Step
from runtime.services import start_run
from tests.support.dispatch import Enqueued


def test_fanout_map_records_one_batch_and_resumes_once_with_ordered_results(
    fake: FakeTransport, branches: Branches, enqueued: Enqueued
) -> None:
    run, _ = start_run("tests.fanout.squares", [40])
    assert execute(run.id).outcome is ExecutionOutcome.SUSPENDED
    created = Event.objects.filter(run_id=run.id, type="step_created")
    assert created.count() == 40
    assert FanoutGroup.objects.get(run_id=run.id).released == 40
    assert len(fake.requests) == 1 and fake.requests[0].kind == "send_batch"
    keys = [m.idempotency_key for m in fake.requests[0].messages]  # 25 branches a message
    assert keys == [dispatch_key(run.id, 1, 1) + ":n25", dispatch_key(run.id, 26, 1) + ":n15"]

    branches.drain(threads=16)
    assert enqueued.count(run.id) == 2  # the start, and the one settling completion
    assert execute(run.id).outcome is ExecutionOutcome.COMPLETED
    assert Run.objects.get(id=run.id).result == [n * n for n in range(40)]
    assert set(completed_once(run.id).values()) == {1} and len(completed_once(run.id)) == 40
    assert all(count == 1 for count in calls.counts.values())


def test_fanout_duplicate_deliveries_run_each_step_once_and_wake_once(
    branches: Branches, enqueued: Enqueued
) -> None:
    run, _ = start_run("tests.fanout.squares", [30])
    execute(run.id)
    branches.drain(threads=16, times=3)
    assert sorted(calls.counts.values()) == [1] * 30
    assert enqueued.count(run.id) == 2
    assert branches.tally()["skipped"] + branches.tally()["stale"] == 60
    execute(run.id)
    assert len(completed_once(run.id)) == 30 and set(completed_once(run.id).values()) == {1}


def test_fanout_max_concurrency_keeps_k_in_flight_and_releases_on_completion(
    fake: FakeTransport, branches: Branches
) -> None:
    run, _ = start_run("tests.fanout.squares", [12], {"max_concurrency": 3})
    execute(run.id)
    assert [len(r.messages) for r in fake.requests] == [3]
    assert Step.objects.filter(run_id=run.id, wake_at__isnull=False).count() == 3
    branches.drain(threads=12)
    assert calls.max_running <= 3
    assert len(fake.delivered) == 12
    execute(run.id)
    assert Run.objects.get(id=run.id).result == [n * n for n in range(12)]


def test_fanout_replay_after_settle_reads_results_without_publishing(
    fake: FakeTransport, branches: Branches
) -> None:
    run, _ = start_run("tests.fanout.squares", [5])
    execute(run.id)
    branches.drain()
    sent = len(fake.delivered)
    execute(run.id)
    assert len(fake.delivered) == sent
    assert statuses(run.id) == {"completed": 5}
