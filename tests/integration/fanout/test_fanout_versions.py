"""Fan-out branches under deployment versions: a branch of a run pinned to a version this
process does not serve is claimed by no one here (a fresh claim or a child's next poll, the
prepared statement and the pooler's function alike), and the fan-out sweep leaves other
versions' groups to their own workers."""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.utils import timezone
from fanout_harness import Branches
from fanout_workflows import calls

import runtime.store.fanout.branch_claims
from runtime.core.branches import BranchAttempt, BranchClaim
from runtime.core.identity import dispatch_key, step_id
from runtime.executor import ExecutionOutcome, execute
from runtime.fanout.branch import claim_branch
from runtime.models import Run, Step
from runtime.recovery.dead_processes import Takeover
from runtime.services import start_run
from runtime.store.fanout.branch_writes import claim_branches
from runtime.store.fanout.fanout_sweeps import take_due_groups

OTHER = "v-other"


def _suspended_on_other_version(n: int) -> uuid.UUID:
    """A run whose fan-out of `n` branches is published, then pinned to OTHER."""
    run, _ = start_run("tests.fanout.squares", [n])
    assert execute(run.id).outcome is ExecutionOutcome.SUSPENDED
    Run.objects.filter(id=run.id).update(app_version=OTHER)
    return run.id


def _won(claim: BranchClaim) -> bool:
    return claim_branches([claim])[0].won


@pytest.mark.parametrize("pooled", [False, True], ids=["prepared", "pooler-function"])
def test_fanout_versions_a_branch_of_another_version_is_not_claimed(
    pooled: bool, monkeypatch: pytest.MonkeyPatch, fanfold_settings: Callable[..., None]
) -> None:
    monkeypatch.setattr(runtime.store.fanout.branch_claims, "pooled", lambda: pooled)
    run_id = _suspended_on_other_version(2)
    first = step_id(run_id, 1)

    assert not _won(BranchClaim(run_id, first, 1))
    assert Step.objects.get(id=first).status == "pending"
    fanfold_settings(SERVE_VERSIONS=OTHER)  # a worker that serves OTHER too takes it
    assert _won(BranchClaim(run_id, first, 1))

    # A child's next poll (`continuing`) is fenced the same way.
    fanfold_settings(SERVE_VERSIONS="")
    assert not _won(BranchClaim(run_id, first, 1, continuing=True))
    fanfold_settings(SERVE_VERSIONS=OTHER)
    assert _won(BranchClaim(run_id, first, 1, continuing=True))


def test_fanout_versions_delivered_branches_of_another_version_run_no_body(
    branches: Branches, fanfold_settings: Callable[..., None]
) -> None:
    run_id = _suspended_on_other_version(3)
    published = branches.pending()
    branches.drain()
    assert sum(calls.counts.values()) == 0  # no body ran: every claim lost
    statuses = Step.objects.filter(run_id=run_id, kind="step").values_list("status", flat=True)
    assert set(statuses) == {"pending"}

    fanfold_settings(SERVE_VERSIONS=OTHER)
    branches.deliver(published)
    assert sum(calls.counts.values()) == 3
    assert execute(run_id).outcome is ExecutionOutcome.COMPLETED
    assert Run.objects.get(id=run_id).result == [0, 1, 4]


def test_fanout_versions_the_sweep_takes_only_served_versions_groups() -> None:
    mine, _ = start_run("tests.fanout.squares", [2])
    assert execute(mine.id).outcome is ExecutionOutcome.SUSPENDED
    other = _suspended_on_other_version(2)
    later = timezone.now() + timedelta(hours=1)  # every group's check is due

    taken = take_due_groups(later, 10, 60.0, ["", "tests"])
    assert [g[1] for g in taken] == [mine.id]
    assert [g[1] for g in take_due_groups(later, 10, 60.0, ["", OTHER])] == [other]


def test_fanout_versions_a_dead_processs_branch_is_taken_over_only_by_its_version(
    branches: Branches, fanfold_settings: Callable[..., None]
) -> None:
    run, _ = start_run("tests.fanout.squares", [2])
    assert execute(run.id).outcome is ExecutionOutcome.SUSPENDED
    branches.delivered = len(branches.fake.delivered)
    assert claim_branch(BranchAttempt(run.id, 1, 1, 1)) is not None
    sid = step_id(run.id, 1)
    dead = secrets.randbits(62) | 1  # a process that holds no liveness lock
    Step.objects.filter(id=sid).update(lease_owner=dead)
    Run.objects.filter(id=run.id).update(app_version=OTHER)  # its run is another release's

    takeover = Takeover()
    for _ in range(3):
        assert takeover.pass_once() == (0, 0)  # not this process's to take over
    assert Step.objects.get(id=sid).lease_owner == dead
    fanfold_settings(SERVE_VERSIONS=OTHER)
    assert takeover.pass_once() == (0, 0)  # first look: a suspect
    assert takeover.pass_once() == (0, 1)
    assert [m.idempotency_key for m in branches.pending()] == [dispatch_key(run.id, 1, 2)]
