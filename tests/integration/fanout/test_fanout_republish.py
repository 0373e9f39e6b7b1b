"""Republishing never feeds a backlog: bounded passes, a dispatch clock per branch, and a failed
publish sent again whatever the queue holds.

Most cases count messages as branches, so the first dispatch sends a message a branch
(FANFOLD_BRANCH_CHUNK=1); the last case has chunks, where a waiting message may hold ten."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from fanout_harness import Branches
from fanout_workflows import completed_once

from publisher.fake import FakeTransport
from runtime.executor import ExecutionOutcome, execute
from runtime.fanout.sweep import QUEUED_GRACE_LEASES, sweep_fanouts_once
from runtime.models import FanoutGroup, Run, Step
from runtime.services import start_run
from tests.support.dispatch import RecordingDispatcher


@pytest.fixture(autouse=True)
def one_branch_a_message(fanfold_settings: Callable[..., None]) -> None:
    fanfold_settings(BRANCH_CHUNK=1)


def _dispatched_long_ago(run_id: object, seconds: float) -> None:
    past = timezone.now() - timedelta(seconds=seconds)
    Step.objects.filter(run_id=run_id).update(wake_at=past)
    FanoutGroup.objects.filter(run_id=run_id).update(check_at=past)


def _fanned_out(
    n: int, fake: FakeTransport, branches: Branches, dispatcher: RecordingDispatcher, depth: int
) -> Any:
    """A run whose `n` branches were published and are taken for never consumed, with
    `depth` messages said to wait in the queue."""
    run, _ = start_run("tests.fanout.squares", [n])
    execute(run.id)
    branches.delivered = len(fake.delivered)
    dispatcher.depth = depth
    return run


def _due_again(run_id: object) -> None:
    FanoutGroup.objects.filter(run_id=run_id).update(check_at=timezone.now() - timedelta(1))


def _drains_to_completion_once_each(run_id: object, branches: Branches) -> None:
    """Deliver what is queued (duplicates lose their claims); the run completes, each branch
    completed once."""
    branches.drain()
    assert execute(run_id).outcome is ExecutionOutcome.COMPLETED
    assert set(completed_once(run_id).values()) == {1}


def test_fanout_sweep_with_messages_waiting_republishes_one_request_per_pass_and_each_once(
    fake: FakeTransport, branches: Branches, dispatcher: RecordingDispatcher
) -> None:
    run = _fanned_out(150, fake, branches, dispatcher, 40)  # all 150 queued, or lost
    _dispatched_long_ago(run.id, QUEUED_GRACE_LEASES * 2 + 5)  # past the queued grace (lease 2)
    oldest = timezone.now() - timedelta(seconds=3600)
    Step.objects.filter(run_id=run.id, position__gt=100).update(wake_at=oldest)

    assert sweep_fanouts_once() == 100  # one publish request's worth
    first = {m.args[1] for m in branches.pending()}
    assert set(range(101, 151)) <= first  # the longest waiting first
    _due_again(run.id)
    assert sweep_fanouts_once() == 50  # the others; the republished ones' clocks restarted
    _due_again(run.id)
    assert sweep_fanouts_once() == 0
    assert len(branches.pending()) == 150

    _drains_to_completion_once_each(run.id, branches)


def test_fanout_sweep_of_a_backlog_older_than_the_grace_republishes_only_what_it_outnumbers(
    fake: FakeTransport, branches: Branches, dispatcher: RecordingDispatcher
) -> None:
    # A fan-out whose queue takes longer than the grace to drain: its first ten branches were
    # just claimed, the other 150 still wait in the queue.
    run = _fanned_out(160, fake, branches, dispatcher, 150)
    branches.deliver(fake.delivered[:10])
    _dispatched_long_ago(run.id, QUEUED_GRACE_LEASES * 2 + 5)
    assert sweep_fanouts_once() == 0

    dispatcher.depth = 143  # seven of the 150 cannot be in the queue: lost, or prefetched
    _due_again(run.id)
    assert sweep_fanouts_once() == 7
    dispatcher.depth = 150  # their new messages wait too
    _due_again(run.id)
    assert sweep_fanouts_once() == 0
    assert len(branches.pending()) == 7

    branches.delivered = 10  # the queue drains: the 150, then the seven duplicates
    _drains_to_completion_once_each(run.id, branches)


def test_fanout_sweep_republishes_a_group_that_no_longer_drains_whatever_the_queue_holds(
    fake: FakeTransport, branches: Branches, dispatcher: RecordingDispatcher
) -> None:
    # Other runs keep 1,000 messages waiting; none of these five was claimed for a grace.
    run = _fanned_out(5, fake, branches, dispatcher, 1000)
    _dispatched_long_ago(run.id, QUEUED_GRACE_LEASES * 2 + 5)
    assert sweep_fanouts_once() == 5


def test_fanout_sweep_republished_branches_wait_a_grace_before_the_next_republish(
    fake: FakeTransport, branches: Branches, dispatcher: RecordingDispatcher
) -> None:
    # A worker that holds the messages but never consumes them (after a broker restart, say):
    # every sweep finds the branches unclaimed.
    # An empty queue: the short grace, two sweep intervals (1 s here).
    run = _fanned_out(3, fake, branches, dispatcher, 0)
    _dispatched_long_ago(run.id, 2)
    _due_again(run.id)
    assert sweep_fanouts_once() == 3

    _due_again(run.id)  # the next sweep interval: still unclaimed, but republished just now
    assert sweep_fanouts_once() == 0
    assert len(branches.pending()) == 3

    _dispatched_long_ago(run.id, 2)
    _due_again(run.id)  # a grace after the republish: due again
    assert sweep_fanouts_once() == 3


def test_fanout_sweep_with_messages_waiting_leaves_recent_branches_alone(
    fake: FakeTransport, branches: Branches, dispatcher: RecordingDispatcher
) -> None:
    run = _fanned_out(5, fake, branches, dispatcher, 1000)  # the five may well be queued
    _dispatched_long_ago(run.id, 10)  # long for an empty queue, not for this one

    assert sweep_fanouts_once() == 0
    dispatcher.depth = 0  # drained, and still unclaimed: lost
    _due_again(run.id)
    assert sweep_fanouts_once() == 5


def test_fanout_replay_with_messages_waiting_republishes_nothing_it_may_duplicate(
    fake: FakeTransport, branches: Branches, dispatcher: RecordingDispatcher
) -> None:
    run, _ = start_run("tests.fanout.squares", [4])
    execute(run.id)
    assert len(fake.delivered) == 4
    dispatcher.depth = 4
    assert execute(run.id).outcome is ExecutionOutcome.SUSPENDED  # the run replayed meanwhile
    assert len(fake.delivered) == 4
    dispatcher.depth = 0
    assert execute(run.id).outcome is ExecutionOutcome.SUSPENDED  # nothing queued: lost
    assert len(fake.delivered) == 8


def test_fanout_failed_publish_goes_out_again_whatever_the_queue_holds(
    fake: FakeTransport, branches: Branches, dispatcher: RecordingDispatcher
) -> None:
    fake.fail_next_request()  # a whole request fails: retryable
    run, _ = start_run("tests.fanout.squares", [6])
    assert execute(run.id).outcome is ExecutionOutcome.SUSPENDED
    assert fake.delivered == []
    assert set(Step.objects.filter(run_id=run.id).values_list("wake_at", flat=True)) == {None}

    dispatcher.depth = 500  # other runs' messages wait; none of these six is among them
    assert execute(run.id).outcome is ExecutionOutcome.SUSPENDED
    assert len(fake.delivered) == 6
    branches.drain()
    assert execute(run.id).outcome is ExecutionOutcome.COMPLETED
    assert Run.objects.get(id=run.id).result == [i * i for i in range(6)]


def test_fanout_sweep_counts_a_waiting_message_as_a_chunk_of_branches(
    fanfold_settings: Callable[..., None],
    fake: FakeTransport,
    branches: Branches,
    dispatcher: RecordingDispatcher,
) -> None:
    fanfold_settings(BRANCH_CHUNK=10)
    run = _fanned_out(160, fake, branches, dispatcher, 15)
    assert [m.kwargs["count"] for m in fake.delivered] == [10] * 16
    branches.deliver(fake.delivered[:1])  # a worker took the first chunk: ten claims
    _dispatched_long_ago(run.id, QUEUED_GRACE_LEASES * 2 + 5)
    assert sweep_fanouts_once() == 0  # fifteen waiting chunks may hold all 150

    dispatcher.depth = 14  # one chunk's worth cannot be in the queue
    _due_again(run.id)
    assert sweep_fanouts_once() == 10
    assert all(m.kwargs.get("count", 1) == 1 for m in branches.pending())  # on their own

    branches.delivered = 1
    _drains_to_completion_once_each(run.id, branches)
