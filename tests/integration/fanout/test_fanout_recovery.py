"""Cancellation, dead-branch takeover by the fan-out sweep, and child-workflow branches."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from fanout_harness import Branches
from fanout_workflows import calls, completed_once

from publisher.fake import FakeTransport
from runtime.core.branch_dispatch import BranchDispatch
from runtime.core.branches import BranchAttempt
from runtime.core.identity import dispatch_key, step_id
from runtime.executor import ExecutionOutcome, execute
from runtime.fanout.branch import claim_branch, run_branch
from runtime.fanout.interrupted import interrupt_at_most_once
from runtime.fanout.sweep import sweep_fanouts_once
from runtime.models import Event, FanoutGroup, Run, Step
from runtime.services import cancel_run, start_run
from tests.support.dispatch import Enqueued, RecordingDispatcher


def test_fanout_branch_of_a_cancelled_run_never_starts(branches: Branches) -> None:
    run, _ = start_run("tests.fanout.squares", [5])
    execute(run.id)
    cancel_run(run.id)
    branches.drain()
    assert calls.counts == {}
    assert branches.tally() == {"skipped": 5}


def test_fanout_sweep_takes_over_a_branch_whose_worker_died(
    fake: FakeTransport, branches: Branches, enqueued: Enqueued
) -> None:
    run, _ = start_run("tests.fanout.squares", [3])
    execute(run.id)
    branches.delivered = len(fake.delivered)  # the three messages went to a worker that dies
    claimed = claim_branch(BranchAttempt(run.id, 2, 1, 1))  # ... after claiming position 2
    assert claimed is not None
    long_ago = timezone.now() - timedelta(seconds=60)
    Step.objects.filter(run_id=run.id).update(wake_at=long_ago)  # leases and dispatch expired
    FanoutGroup.objects.filter(run_id=run.id).update(check_at=long_ago)

    assert sweep_fanouts_once() == 3
    keys = [m.idempotency_key for m in branches.pending()]
    assert sorted(keys) == sorted(
        [dispatch_key(run.id, 1, 1), dispatch_key(run.id, 2, 2), dispatch_key(run.id, 3, 1)]
    )
    branches.drain()
    assert enqueued.count(run.id) == 2
    assert execute(run.id).outcome is ExecutionOutcome.COMPLETED
    assert Run.objects.get(id=run.id).result == [0, 1, 4]
    assert Step.objects.get(id=step_id(run.id, 2)).attempt == 2
    assert set(completed_once(run.id).values()) == {1}
    # The dead attempt reporting late is stale: it changes nothing.
    assert run_branch(BranchAttempt(run.id, 2, 1, 1)) == "skipped"


def test_fanout_child_workflows_count_as_branches(branches: Branches, enqueued: Enqueued) -> None:
    run, _ = start_run("tests.fanout.parent", [])
    execute(run.id)
    branches.drain()  # starts two child runs; the step branch completes
    children = list(Run.objects.filter(idempotency_key__startswith=f"ff-child:{run.id}:"))
    assert len(children) == 2
    for child in children:
        assert execute(child.id).outcome is ExecutionOutcome.COMPLETED
    assert len(branches.later.calls) == 2  # each child branch polls its child
    branches.deliver_later()
    assert branches.later.calls == []
    assert enqueued.count(run.id) == 2
    assert execute(run.id).outcome is ExecutionOutcome.COMPLETED
    assert Run.objects.get(id=run.id).result == [5, 9, 17]


def test_fanout_interrupted_at_most_once_branch_is_failed_not_rerun(
    fake: FakeTransport, branches: Branches
) -> None:
    run, _ = start_run("tests.fanout.charges", [2])
    execute(run.id)
    branches.delivered = len(fake.delivered)  # both messages went to a worker that dies
    assert claim_branch(BranchAttempt(run.id, 1, 1, 1)) is not None  # ... after claiming position 1
    long_ago = timezone.now() - timedelta(seconds=60)
    Step.objects.filter(run_id=run.id).update(wake_at=long_ago)
    FanoutGroup.objects.filter(run_id=run.id).update(check_at=long_ago)

    assert sweep_fanouts_once() == 1  # only position 2 is republished
    branches.drain()
    assert calls.counts == {1: 1}  # the interrupted charge (item 0) never ran again
    assert execute(run.id).outcome is ExecutionOutcome.COMPLETED
    assert Run.objects.get(id=run.id).result == ["StepInterrupted", 1]


def test_fanout_at_most_once_branch_whose_lease_was_renewed_is_not_interrupted(
    fake: FakeTransport, branches: Branches
) -> None:
    run, _ = start_run("tests.fanout.charges", [2])
    execute(run.id)
    assert claim_branch(BranchAttempt(run.id, 1, 1, 1)) is not None
    long_ago = timezone.now() - timedelta(seconds=60)
    Step.objects.filter(run_id=run.id, position=1).update(wake_at=long_ago)
    seen_running = {1: "tests.fanout.charge"}  # what a sweep saw: running, lease expired
    # ... and then the worker, alive after all, renewed its lease before the sweep wrote.
    Step.objects.filter(run_id=run.id, position=1).update(
        wake_at=timezone.now() + timedelta(seconds=30)
    )

    left = interrupt_at_most_once(run.id, 1, seen_running, [BranchDispatch(1, 2)])

    assert left == []  # not handed back for a takeover either
    step = Step.objects.get(run_id=run.id, position=1)
    assert (step.status, step.attempt, step.error) == ("running", 1, None)
    assert not Event.objects.filter(run_id=run.id, type="step_failed").exists()


def test_fanout_cancelling_the_parent_cancels_its_child_runs(branches: Branches) -> None:
    run, _ = start_run("tests.fanout.parent", [])
    execute(run.id)
    branches.drain()  # starts the two child runs, which nobody executes yet
    children = Run.objects.filter(idempotency_key__startswith=f"ff-child:{run.id}:")
    assert children.count() == 2
    finished = children.first()
    assert finished is not None
    assert execute(finished.id).outcome is ExecutionOutcome.COMPLETED

    cancel_run(run.id)

    statuses = {c.id: c.status for c in children}
    assert statuses.pop(finished.id) == "completed"  # a finished child keeps its outcome
    assert list(statuses.values()) == ["cancelled"]
    assert Run.objects.get(id=run.id).status == "cancelled"


@pytest.mark.parametrize(("depth", "republished"), [(0, 3), (5, 0), (None, 0)])
def test_fanout_sweep_takes_unclaimed_branches_for_lost_only_when_the_queue_is_empty(
    fake: FakeTransport,
    branches: Branches,
    dispatcher: RecordingDispatcher,
    depth: int | None,
    republished: int,
) -> None:
    run, _ = start_run("tests.fanout.squares", [3])
    execute(run.id)
    branches.delivered = len(fake.delivered)  # reserved by a worker that died
    dispatcher.depth = depth
    # Dispatched past the short grace (two sweep intervals: 1 s here), not the long one (4 s).
    two_seconds_ago = timezone.now() - timedelta(seconds=2)
    Step.objects.filter(run_id=run.id).update(wake_at=two_seconds_ago)
    FanoutGroup.objects.filter(run_id=run.id).update(check_at=two_seconds_ago)
    assert sweep_fanouts_once() == republished
    assert len(branches.pending()) == republished
