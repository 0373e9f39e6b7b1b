"""Fast takeover of a branch whose process died: its lease ends after two looks, long before
it would expire, and the fan-out sweep publishes its next attempt."""

from __future__ import annotations

import secrets

from fanout_harness import Branches
from fanout_workflows import completed_once

from publisher.fake import FakeTransport
from runtime.core.branches import BranchAttempt
from runtime.core.identity import dispatch_key, step_id
from runtime.executor import ExecutionOutcome, execute
from runtime.fanout.branch import claim_branch
from runtime.leases.liveness import process_key
from runtime.models import Run, Step
from runtime.recovery.dead_processes import Takeover
from runtime.services import start_run


def test_fanout_takeover_republishes_a_dead_processs_branch_at_once(
    fake: FakeTransport, branches: Branches
) -> None:
    run, _ = start_run("tests.fanout.squares", [3])
    execute(run.id)
    branches.delivered = len(fake.delivered)  # the first messages went to a worker that dies
    assert claim_branch(BranchAttempt(run.id, 2, 1, 1)) is not None
    sid = step_id(run.id, 2)
    assert Step.objects.get(id=sid).lease_owner == process_key()  # the claim names its process
    Step.objects.filter(id=sid).update(lease_owner=secrets.randbits(62) | 1)  # ... now dead
    takeover = Takeover()

    assert takeover.pass_once() == (0, 0)
    assert branches.pending() == []
    assert takeover.pass_once() == (0, 1)
    assert [m.idempotency_key for m in branches.pending()] == [dispatch_key(run.id, 2, 2)]

    branches.delivered = 0  # now deliver everything, the lost first messages too
    branches.drain()
    assert execute(run.id).outcome is ExecutionOutcome.COMPLETED
    assert Run.objects.get(id=run.id).result == [0, 1, 4]
    assert Step.objects.get(id=sid).attempt == 2
    assert set(completed_once(run.id).values()) == {1}


def test_fanout_takeover_leaves_a_live_processs_branch_alone(
    fake: FakeTransport, branches: Branches
) -> None:
    run, _ = start_run("tests.fanout.squares", [2])
    execute(run.id)
    branches.delivered = len(fake.delivered)
    assert claim_branch(BranchAttempt(run.id, 1, 1, 1)) is not None  # this process: alive
    takeover = Takeover()
    for _ in range(3):
        assert takeover.pass_once() == (0, 0)
    assert branches.pending() == []
