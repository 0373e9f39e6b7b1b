"""Chunks on PostgreSQL: a fan-out's first dispatch sends FANFOLD_BRANCH_CHUNK consecutive
branches a message, and the worker that takes one runs them in turn (runtime.fanout.chunk)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from fanout_harness import Branches
from fanout_workflows import calls, completed_once

from publisher.fake import FakeTransport
from runtime.core.branches import BranchAttempt
from runtime.core.identity import dispatch_key
from runtime.executor import ExecutionOutcome, execute
from runtime.fanout import chunk, report
from runtime.fanout.sweep import sweep_fanouts_once
from runtime.models import FanoutGroup, Run, Step
from runtime.services import start_run
from tests.support.dispatch import Later


@pytest.fixture(autouse=True)
def _ten_a_chunk(fanfold_settings: Callable[..., None]) -> None:
    fanfold_settings(BRANCH_CHUNK=10)  # the shapes below: chunks of ten


@pytest.fixture
def standalone_claims(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Positions of the claims a chunk commits on their own (not in a report's transaction)."""
    claimed: list[int] = []
    real = chunk.claim_branch

    def counting(branch: BranchAttempt, **kwargs: Any) -> Any:
        claimed.append(branch.position)
        return real(branch, **kwargs)

    monkeypatch.setattr(chunk, "claim_branch", counting)
    return claimed


def _fanned_out(workflow: str, args: list[Any], options: dict[str, Any] | None = None) -> Run:
    """A run started and through its first pass, which published its branches."""
    run, _ = start_run(workflow, args, options or {})
    execute(run.id)
    return run


def _chunks(fake: FakeTransport) -> list[tuple[int, int]]:
    return [(m.args[1], m.kwargs.get("count", 1)) for m in fake.delivered]


def test_chunk_runs_its_branches_with_each_claim_in_the_previous_report(
    fanfold_settings: Callable[..., None],
    fake: FakeTransport,
    branches: Branches,
    standalone_claims: list[int],
) -> None:
    fanfold_settings(BRANCH_CHUNK_SECONDS=60)
    run = _fanned_out("tests.fanout.squares", [23])
    assert _chunks(fake) == [(1, 10), (11, 10), (21, 3)]
    assert fake.delivered[0].idempotency_key == dispatch_key(run.id, 1, 1) + ":n10"

    branches.drain(threads=1)
    assert branches.outcomes == ["completed:10", "completed:10", "completed:3"]
    assert standalone_claims == [1, 11, 21]  # only each chunk's first: the rest rode along
    assert execute(run.id).outcome is ExecutionOutcome.COMPLETED
    assert Run.objects.get(id=run.id).result == [n * n for n in range(23)]
    assert set(completed_once(run.id).values()) == {1}


def test_chunk_delivered_again_skips_every_branch(
    fanfold_settings: Callable[..., None], fake: FakeTransport, branches: Branches
) -> None:
    fanfold_settings(BRANCH_CHUNK_SECONDS=60)
    run = _fanned_out("tests.fanout.squares", [10])
    branches.drain(threads=1, times=2)
    assert branches.outcomes == ["completed:10", "skipped:10"]
    assert sum(calls.counts.values()) == 10
    assert execute(run.id).outcome is ExecutionOutcome.COMPLETED


def test_chunk_delivered_twice_at_once_runs_each_branch_once(
    fake: FakeTransport, branches: Branches
) -> None:
    run = _fanned_out("tests.fanout.squares", [30])
    branches.drain(threads=4, times=2)  # two workers take each chunk side by side
    assert sum(calls.counts.values()) == 30  # no body ran twice
    assert execute(run.id).outcome is ExecutionOutcome.COMPLETED
    assert set(completed_once(run.id).values()) == {1}
    taken = branches.tally()
    assert taken["completed"] == 30
    assert taken["completed"] + taken["skipped"] + taken["stale"] >= 60  # each copy's every one


def test_chunk_that_finds_a_branch_taken_skips_it_and_runs_the_rest(
    fanfold_settings: Callable[..., None],
    fake: FakeTransport,
    branches: Branches,
    standalone_claims: list[int],
) -> None:
    fanfold_settings(BRANCH_CHUNK_SECONDS=60)  # no split however loaded the machine
    run = _fanned_out("tests.fanout.squares", [5])
    Step.objects.filter(run_id=run.id, position=3).update(attempt=2)  # taken over meanwhile
    branches.deliver(fake.delivered, threads=1)
    assert branches.outcomes == ["completed:4,skipped:1"]
    assert standalone_claims == [1]  # 3's claim, riding in 1's report with 2, 4 and 5, lost
    assert sum(calls.counts.values()) == 4


def test_chunk_whose_bodies_used_its_time_publishes_the_rest_on_their_own(
    fanfold_settings: Callable[..., None], fake: FakeTransport, branches: Branches
) -> None:
    fanfold_settings(BRANCH_CHUNK_SECONDS=0.000001)
    run = _fanned_out("tests.fanout.squares", [10])
    before = timezone.now()
    branches.deliver(fake.delivered[:1], threads=1)
    branches.delivered = 1
    # The first body used up the time: the second, claimed with the first's report, still ran.
    assert branches.outcomes == ["completed:2,published:8"]
    rest = branches.pending()
    assert [(m.args[1], m.kwargs.get("count", 1)) for m in rest] == [(p, 1) for p in range(3, 11)]
    assert [m.idempotency_key for m in rest] == [dispatch_key(run.id, p, 1) for p in range(3, 11)]
    clocks = Step.objects.filter(run_id=run.id, position__gt=2).values_list("wake_at", flat=True)
    assert all(c is not None and c >= before for c in clocks)  # their lost-message clock

    branches.drain()
    assert execute(run.id).outcome is ExecutionOutcome.COMPLETED
    assert set(completed_once(run.id).values()) == {1}


def test_chunk_time_counts_bodies_not_waits_for_the_database(
    fanfold_settings: Callable[..., None],
    fake: FakeTransport,
    branches: Branches,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fanfold_settings(BRANCH_CHUNK_SECONDS=0.05)
    real = report.record_reports

    def slow_commits(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.06)  # a loaded database: each commit waits longer than the bodies take
        return real(*args, **kwargs)

    monkeypatch.setattr(report, "record_reports", slow_commits)
    _fanned_out("tests.fanout.squares", [10])
    branches.drain(threads=1)
    assert branches.outcomes == ["completed:10"]


def test_chunk_stops_at_a_branch_that_will_retry(
    fake: FakeTransport, branches: Branches, later: Later
) -> None:
    run = _fanned_out("tests.fanout.flakies", [4])
    assert _chunks(fake) == [(1, 4)]
    branches.drain(threads=1)
    # The first branch failed its first attempt: the other three went out alone, and failed
    # theirs too, each scheduling its second attempt.
    assert branches.outcomes[0] == "published:3,retrying:1"
    assert branches.outcomes[1:] == ["retrying"] * 3
    assert len(later.calls) == 4
    branches.deliver_later()
    assert execute(run.id).outcome is ExecutionOutcome.COMPLETED
    assert Run.objects.get(id=run.id).result == [0, 1, 2, 3]


def test_chunk_whose_rest_cannot_be_published_leaves_them_to_the_sweep(
    fanfold_settings: Callable[..., None], fake: FakeTransport, branches: Branches
) -> None:
    fanfold_settings(BRANCH_CHUNK_SECONDS=0.000001)
    run = _fanned_out("tests.fanout.squares", [4])
    fake.fail_next_request()
    branches.deliver(fake.delivered[:1], threads=1)
    branches.delivered = 1
    assert branches.outcomes == ["completed:2,published:0"]
    assert branches.pending() == []
    # Their dispatch is void: the sweep publishes them at its next look, whatever the grace.
    assert list(
        Step.objects.filter(run_id=run.id, position__gt=2).values_list("wake_at", flat=True)
    ) == [None, None]
    FanoutGroup.objects.filter(run_id=run.id).update(check_at=timezone.now() - timedelta(1))
    assert sweep_fanouts_once() == 2

    branches.drain()
    assert execute(run.id).outcome is ExecutionOutcome.COMPLETED
    assert set(completed_once(run.id).values()) == {1}


@pytest.mark.parametrize(
    ("workflow", "options"),
    [
        ("tests.fanout.squares", {"max_concurrency": 3}),  # released as others finish
        ("tests.fanout.charges", {}),  # at-most-once steps
        ("tests.fanout.parent", None),  # child workflows among the branches
    ],
)
def test_fanouts_that_release_or_guard_their_branches_send_one_a_message(
    fake: FakeTransport, workflow: str, options: dict[str, Any] | None
) -> None:
    args = [] if options is None else [6]
    _fanned_out(workflow, args, options)
    assert fake.delivered and all("count" not in m.kwargs for m in fake.delivered)


def test_chunking_off_sends_a_message_a_branch(
    fanfold_settings: Callable[..., None], fake: FakeTransport
) -> None:
    fanfold_settings(BRANCH_CHUNK=1)
    _fanned_out("tests.fanout.squares", [12])
    assert _chunks(fake) == [(p, 1) for p in range(1, 13)]
