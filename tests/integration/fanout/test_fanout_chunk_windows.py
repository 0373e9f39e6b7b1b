"""A chunk's branches in windows on PostgreSQL (runtime.fanout.chunk_window): claimed together,
run in turn, their reports committed together; what a slow or failing body leaves to others."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import Any

import pytest
from fanout_harness import Branches
from fanout_workflows import FAIL, calls, completed_once

from publisher.fake import FakeTransport
from runtime.checkpoint.errors import CheckpointFailed
from runtime.core.clock import current_time
from runtime.core.identity import dispatch_key
from runtime.durable.body import BodyOutcome, StepBody
from runtime.executor import ExecutionOutcome, execute
from runtime.fanout import chunk_window, report
from runtime.leases.keepers import branch_leases
from runtime.models import Run, Step, StepStatus
from runtime.services import start_run
from tests.support.statements import statements_sent


@pytest.fixture(autouse=True)
def _ten_a_chunk(fanfold_settings: Callable[..., None]) -> None:
    fanfold_settings(BRANCH_CHUNK=10)  # the shapes below: chunks of ten


@pytest.fixture
def quick_bodies(monkeypatch: pytest.MonkeyPatch) -> None:
    """The 2 ms bodies of tests.fanout.square count as quick: a window may keep them all."""
    monkeypatch.setattr(chunk_window, "AT_RISK_SECONDS", 60.0)


def _fanned_out(workflow: str, args: list[Any]) -> Run:
    run, _ = start_run(workflow, args)
    execute(run.id)
    return run


def _commits(sent: list[tuple[str, bool]]) -> int:
    return sum(1 for sql, _ in sent if sql.strip().upper() == "COMMIT")


def test_chunk_of_quick_bodies_commits_its_reports_together(
    quick_bodies: None,
    fanfold_settings: Callable[..., None],
    fake: FakeTransport,
    branches: Branches,
) -> None:
    fanfold_settings(BRANCH_CHUNK_SECONDS=60)
    run = _fanned_out("tests.fanout.squares", [10])
    with statements_sent(every_thread=True) as sent:
        branches.drain(threads=1)
    assert branches.outcomes == ["completed:10"]
    # The first claim, the first report with the nine claims after it, then the nine reports.
    assert _commits(sent) == 3
    assert execute(run.id).outcome is ExecutionOutcome.COMPLETED
    assert Run.objects.get(id=run.id).result == [n * n for n in range(10)]
    assert set(completed_once(run.id).values()) == {1}


def test_window_branch_finishes_when_its_body_ends_not_when_its_window_commits(
    quick_bodies: None,
    fanfold_settings: Callable[..., None],
    fake: FakeTransport,
    branches: Branches,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fanfold_settings(BRANCH_CHUNK_SECONDS=60)
    run = _fanned_out("tests.fanout.squares", [10])
    body_starts: dict[int, datetime] = {}
    real = StepBody.run

    def noted(body: StepBody, max_bytes: int) -> BodyOutcome:
        body_starts[body.call.info.position] = current_time()
        return real(body, max_bytes)

    monkeypatch.setattr(StepBody, "run", noted)
    branches.drain(threads=1)
    finished = dict(
        Step.objects.filter(run_id=run.id, position__gt=0).values_list("position", "finished_at")
    )
    # 2 to 10 ran in one window and committed together, each finished before the next began.
    assert all(finished[p] <= body_starts[p + 1] for p in range(2, 10))


@pytest.fixture
def slow_third(monkeypatch: pytest.MonkeyPatch) -> None:
    """The body of the branch at position 3 reports having taken a second."""
    real = StepBody.run

    def timed(body: StepBody, max_bytes: int) -> BodyOutcome:
        outcome = real(body, max_bytes)
        return replace(outcome, seconds=1.0) if body.call.info.position == 3 else outcome

    monkeypatch.setattr(StepBody, "run", timed)


def test_window_whose_body_used_the_time_hands_its_other_branches_back(
    quick_bodies: None,
    fanfold_settings: Callable[..., None],
    fake: FakeTransport,
    branches: Branches,
    slow_third: None,
) -> None:
    fanfold_settings(BRANCH_CHUNK_SECONDS=0.5)
    run = _fanned_out("tests.fanout.squares", [10])
    branches.deliver(fake.delivered, threads=1)
    branches.delivered = 1
    # 2 to 10 were claimed with 1's report; after 3's second, 4 to 10 did not start.
    assert branches.outcomes == ["completed:3,published:7"]
    rest = branches.pending()
    assert [(m.args[1], m.kwargs.get("count", 1)) for m in rest] == [(p, 1) for p in range(4, 11)]
    assert [m.idempotency_key for m in rest] == [dispatch_key(run.id, p, 1) for p in range(4, 11)]
    handed_back = Step.objects.filter(run_id=run.id, position__gt=3)
    assert {(s.status, s.attempt, s.lease_owner) for s in handed_back} == {
        (StepStatus.PENDING, 0, None)
    }
    assert sum(calls.counts.values()) == 3

    branches.drain()
    assert branches.tally()["completed"] == 10
    assert execute(run.id).outcome is ExecutionOutcome.COMPLETED
    assert set(completed_once(run.id).values()) == {1}


def test_window_with_a_failing_body_commits_the_reports_before_it(
    quick_bodies: None,
    fanfold_settings: Callable[..., None],
    fake: FakeTransport,
    branches: Branches,
) -> None:
    fanfold_settings(BRANCH_CHUNK_SECONDS=60)
    FAIL.add(4)  # the branch at position 5
    run, _ = start_run("tests.fanout.squares", [10], {"return_exceptions": True})
    execute(run.id)
    branches.deliver(fake.delivered, threads=1)
    branches.delivered = 1
    assert branches.outcomes == ["completed:4,failed:1,published:5"]
    assert (
        _statuses(run)
        == [StepStatus.COMPLETED] * 4 + [StepStatus.FAILED] + [StepStatus.PENDING] * 5
    )

    branches.drain()
    assert execute(run.id).outcome is ExecutionOutcome.COMPLETED
    assert Run.objects.get(id=run.id).result == [
        {"failed": 5} if n == 4 else n * n for n in range(10)
    ]
    assert sum(calls.counts.values()) == 10


def test_window_whose_failure_fails_the_fanout_runs_none_of_its_cancelled_branches(
    quick_bodies: None,
    fanfold_settings: Callable[..., None],
    fake: FakeTransport,
    branches: Branches,
) -> None:
    fanfold_settings(BRANCH_CHUNK_SECONDS=60)
    FAIL.add(4)
    run = _fanned_out("tests.fanout.squares", [10])
    branches.drain(threads=1)
    assert branches.tally()["completed"] == 4
    assert (
        _statuses(run)
        == [StepStatus.COMPLETED] * 4 + [StepStatus.FAILED] + [StepStatus.CANCELLED] * 5
    )
    assert sum(calls.counts.values()) == 5
    assert execute(run.id).outcome is ExecutionOutcome.FAILED


def _statuses(run: Run) -> list[str]:
    rows = Step.objects.filter(run_id=run.id, position__gt=0).order_by("position")
    return list(rows.values_list("status", flat=True))


def test_window_whose_commit_fails_leaves_its_claims_to_the_takeover(
    quick_bodies: None,
    fanfold_settings: Callable[..., None],
    fake: FakeTransport,
    branches: Branches,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fanfold_settings(BRANCH_CHUNK_SECONDS=60)
    FAIL.add(4)  # the branch at position 5: the reports of 2 to 4 are committed before its own
    run = _fanned_out("tests.fanout.squares", [10])
    real, commits = report.record_reports, []

    def second_fails(*args: Any, **kwargs: Any) -> Any:
        commits.append(1)
        if len(commits) == 2:
            raise CheckpointFailed("the database went away")
        return real(*args, **kwargs)

    monkeypatch.setattr(report, "record_reports", second_fails)
    with pytest.raises(CheckpointFailed):
        branches.deliver(fake.delivered, threads=1)
    # 2 to 10 were claimed with 1's report; none is recorded and 6 to 10 never started. No
    # lease of theirs is kept alive here: they expire, and the takeover publishes them again.
    assert branch_leases.beat_once() == 0
    assert _statuses(run)[1:] == [StepStatus.RUNNING] * 9
    assert sum(calls.counts.values()) == 5


def test_window_of_bodies_that_take_time_reports_each_as_it_ends(
    fanfold_settings: Callable[..., None],
    fake: FakeTransport,
    branches: Branches,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A worker that dies loses its uncommitted results: past AT_RISK_SECONDS of bodies, each
    report commits as its body ends (with the next branch's claim), as a lone branch's does."""
    fanfold_settings(BRANCH_CHUNK_SECONDS=60)
    real = StepBody.run

    def timed(body: StepBody, max_bytes: int) -> BodyOutcome:
        return replace(real(body, max_bytes), seconds=0.01)  # a 10 ms body

    monkeypatch.setattr(StepBody, "run", timed)
    run = _fanned_out("tests.fanout.squares", [10])
    with statements_sent(every_thread=True) as sent:
        branches.drain(threads=1)
    assert branches.outcomes == ["completed:10"]
    assert _commits(sent) == 11  # the first claim, then each report with the next claim
    assert execute(run.id).outcome is ExecutionOutcome.COMPLETED


def _completed_positions(run: Run) -> set[int]:
    done = Step.objects.filter(run_id=run.id, position__gt=0, status=StepStatus.COMPLETED)
    return set(done.values_list("position", flat=True))


@pytest.fixture
def fourth_waits_for_the_others(monkeypatch: pytest.MonkeyPatch) -> dict[str, set[int]]:
    """The body at position 4 waits (5 s at most) for the branches before it to be committed,
    as the failover test's held bodies wait for every body that ran to be; says what it saw."""
    real, seen = StepBody.run, {}

    def waits(body: StepBody, max_bytes: int) -> BodyOutcome:
        if body.call.info.position == 4:
            run = Run.objects.get(id=body.call.info.run_id)
            deadline = time.monotonic() + 5
            while _completed_positions(run) != {1, 2, 3} and time.monotonic() < deadline:
                time.sleep(0.01)
            seen["committed"] = _completed_positions(run)
        return real(body, max_bytes)

    monkeypatch.setattr(StepBody, "run", waits)
    return seen


def test_window_body_that_runs_on_does_not_hold_back_the_reports_before_it(
    fanfold_settings: Callable[..., None],
    fake: FakeTransport,
    branches: Branches,
    monkeypatch: pytest.MonkeyPatch,
    fourth_waits_for_the_others: dict[str, set[int]],
) -> None:
    """2 to 10 are claimed in one window; once 4's body has run past what the window may keep
    unreported, the reports of 2 and 3 are committed while it runs, not after it."""
    monkeypatch.setattr(chunk_window, "AT_RISK_SECONDS", 0.2)  # a window of all nine
    fanfold_settings(BRANCH_CHUNK_SECONDS=60)
    run = _fanned_out("tests.fanout.squares", [10])
    branches.drain(threads=1)
    assert fourth_waits_for_the_others["committed"] == {1, 2, 3}
    assert branches.outcomes == ["completed:10"]
    assert branch_leases.beat_once() == 0
    assert execute(run.id).outcome is ExecutionOutcome.COMPLETED
    assert Run.objects.get(id=run.id).result == [n * n for n in range(10)]
    assert set(completed_once(run.id).values()) == {1}
    assert sum(calls.counts.values()) == 10


def test_window_whose_reports_fail_to_commit_while_a_body_runs_leaves_them_to_the_takeover(
    fanfold_settings: Callable[..., None],
    fake: FakeTransport,
    branches: Branches,
    monkeypatch: pytest.MonkeyPatch,
    fourth_waits_for_the_others: dict[str, set[int]],
) -> None:
    """The database gone while 4's body runs: the commit of 2 and 3's reports fails, the chunk
    fails once the body has ended, and no lease of the window's is kept alive here."""
    monkeypatch.setattr(chunk_window, "AT_RISK_SECONDS", 0.2)
    fanfold_settings(BRANCH_CHUNK_SECONDS=60)
    run = _fanned_out("tests.fanout.squares", [10])
    real = report.record_reports

    def fails_meanwhile(*args: Any, **kwargs: Any) -> Any:
        if threading.current_thread().name == "fanfold-window-flush":
            raise CheckpointFailed("the database went away")
        return real(*args, **kwargs)

    monkeypatch.setattr(report, "record_reports", fails_meanwhile)
    with pytest.raises(CheckpointFailed):
        branches.deliver(fake.delivered, threads=1)
    assert fourth_waits_for_the_others["committed"] == {1}
    assert branch_leases.beat_once() == 0
    assert _statuses(run)[1:] == [StepStatus.RUNNING] * 9
    assert sum(calls.counts.values()) == 4
