"""The pure fan-in rules of runtime.core.fanin: resolving options, verdicts, release, dispatch."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from runtime.core.branch_dispatch import (
    BranchDispatch,
    chunked,
    due_dispatches,
    outcome_summary,
    republished_pending,
    summary_counts,
)
from runtime.core.fanin import (
    CANCELLED_ERROR,
    FAILED,
    SUCCEEDED,
    FanInRule,
    GroupCounts,
    after_finish,
    initial_release,
)
from runtime.core.settle import BranchState, Failure, settle

NOW = datetime(2030, 1, 1, tzinfo=UTC)


def test_rule_default_fails_at_the_first_failure() -> None:
    rule = FanInRule.resolve(5)
    assert rule == FanInRule(5, None, 0)
    assert rule.verdict(4, 0) is None
    assert rule.verdict(0, 1) == FAILED
    assert rule.verdict(5, 0) == SUCCEEDED


def test_rule_return_exceptions_waits_for_every_branch() -> None:
    rule = FanInRule.resolve(3, return_exceptions=True)
    assert rule.verdict(0, 2) is None
    assert rule.verdict(0, 3) == SUCCEEDED


def test_rule_min_successful_decides_early_both_ways() -> None:
    rule = FanInRule.resolve(5, min_successful=2)
    assert rule.failure_limit == 3
    assert rule.verdict(2, 0) == SUCCEEDED
    assert rule.verdict(1, 3) is None
    assert rule.verdict(0, 4) == FAILED  # 2 successes can no longer happen


def test_rule_tolerated_failures_fails_past_the_count() -> None:
    rule = FanInRule.resolve(4, tolerated_failures=1)
    assert rule.verdict(2, 1) is None
    assert rule.verdict(3, 1) == SUCCEEDED
    assert rule.verdict(1, 2) == FAILED


def test_rule_both_counts_take_the_stricter_failure_limit() -> None:
    assert FanInRule.resolve(10, min_successful=8, tolerated_failures=5).failure_limit == 2
    assert FanInRule.resolve(10, min_successful=2, tolerated_failures=1).failure_limit == 1


@pytest.mark.parametrize(
    "options",
    [
        {"min_successful": 4},
        {"min_successful": -1},
        {"tolerated_failures": -1},
        {"min_successful": True},
    ],
)
def test_rule_rejects_impossible_counts(options: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        FanInRule.resolve(3, **options)


def test_initial_release_is_the_concurrency_window() -> None:
    assert initial_release(10, None) == 10
    assert initial_release(10, 3) == 3
    assert initial_release(2, 3) == 2
    with pytest.raises(ValueError):
        initial_release(3, 0)


def test_after_finish_releases_one_per_finished_branch_until_decided() -> None:
    rule = FanInRule.resolve(5, return_exceptions=True)
    step = after_finish(rule, GroupCounts(5, 2, 1, 0), 1)
    assert step.verdict is None and step.release == range(2, 3)
    step = after_finish(rule, GroupCounts(5, 5, 3, 1), 1)
    assert step.release == range(0)
    decided = after_finish(FanInRule.resolve(5), GroupCounts(5, 2, 0, 1), 1)
    assert decided.verdict == FAILED and decided.release == range(0)


def test_settle_returns_results_in_branch_order_with_failures_in_place() -> None:
    rule = FanInRule.resolve(3, min_successful=1)
    branches = [
        BranchState(4, "a", "failed", error={"type": "X", "message": "boom"}),
        BranchState(5, "b", "completed", result=5),
        BranchState(6, "c", "cancelled"),
    ]
    settled = settle(rule, branches, first_failure=4)
    assert settled is not None and settled.verdict == SUCCEEDED
    assert settled.values == [
        Failure(4, "a", {"type": "X", "message": "boom"}),
        5,
        Failure(6, "c", CANCELLED_ERROR),
    ]


def test_settle_names_the_first_failure_of_the_event_log() -> None:
    rule = FanInRule.resolve(3, return_exceptions=False, tolerated_failures=1)
    branches = [
        BranchState(1, "a", "failed", error={"type": "A"}),
        BranchState(2, "b", "failed", error={"type": "B"}),
        BranchState(3, "c", "cancelled"),
    ]
    settled = settle(rule, branches, first_failure=2)
    assert settled is not None and settled.verdict == FAILED
    assert settled.first_failure == Failure(2, "b", {"type": "B"})


def test_settle_is_none_while_undecided() -> None:
    rule = FanInRule.resolve(2)
    assert (
        settle(rule, [BranchState(1, "a", "completed"), BranchState(2, "b", "running")], None)
        is None
    )


def test_due_dispatches_republishes_lost_and_orphaned_branches_only() -> None:
    old = NOW - timedelta(seconds=10)
    branches = [
        BranchState(1, "a", "pending", 0, wake_at=old),  # released long ago, never claimed
        BranchState(2, "a", "pending", 0, wake_at=NOW),  # just released
        BranchState(3, "a", "running", 1, wake_at=old),  # its worker stopped renewing
        BranchState(4, "a", "running", 1, wake_at=NOW + timedelta(seconds=5)),  # alive
        BranchState(5, "a", "pending", 2, wake_at=NOW + timedelta(seconds=3)),  # retry not due
        BranchState(6, "a", "completed", 1),
        BranchState(7, "a", "pending", 0),  # not released yet
    ]
    due = due_dispatches(branches, 1, 6, NOW, pending_grace=5.0)
    assert due == [BranchDispatch(1, 1), BranchDispatch(3, 2), BranchDispatch(5, 3, 3.0)]
    replay = due_dispatches(branches, 1, 6, NOW, pending_grace=0.0)
    assert BranchDispatch(2, 1) in replay and all(d.position != 7 for d in replay)


def test_due_dispatches_bounds_lost_branches_oldest_first_but_never_unsent_ones() -> None:
    def ago(seconds: float) -> datetime:
        return NOW - timedelta(seconds=seconds)

    branches = [
        BranchState(1, "a", "pending", 0, wake_at=ago(10)),
        BranchState(2, "a", "pending", 0, wake_at=ago(30)),
        BranchState(3, "a", "pending", 0),  # its publish failed: no dispatch time
        BranchState(4, "a", "running", 1, wake_at=ago(1)),  # a takeover: not a republish
        BranchState(5, "a", "pending", 0, wake_at=ago(20)),
    ]
    due = due_dispatches(branches, 1, 5, NOW, pending_grace=5.0, pending_budget=1)
    assert due == [BranchDispatch(2, 1), BranchDispatch(3, 1), BranchDispatch(4, 2)]
    assert republished_pending(due, branches) == [2, 3]
    assert len(due_dispatches(branches, 1, 5, NOW, pending_grace=5.0)) == 5
    assert due_dispatches(branches, 1, 5, NOW, pending_grace=60.0, pending_budget=0) == [
        BranchDispatch(3, 1),
        BranchDispatch(4, 2),
    ]


def test_due_dispatches_republishes_no_more_than_the_queue_cannot_be_holding() -> None:
    def ago(seconds: float) -> datetime:
        return NOW - timedelta(seconds=seconds)

    branches = [BranchState(p, "a", "pending", 0, wake_at=ago(100 + p)) for p in range(1, 7)]
    branches += [
        BranchState(7, "a", "pending", 0),  # its publish failed: not in the queue at all
        BranchState(8, "a", "running", 1, wake_at=ago(1)),  # a takeover
        BranchState(9, "a", "pending", 1, wake_at=NOW + timedelta(seconds=3)),  # a retry, later
    ]

    def due(queued: int, budget: int | None = None) -> list[int]:
        found = due_dispatches(
            branches, 1, 9, NOW, pending_grace=5.0, pending_budget=budget, queued=queued
        )
        return [d.position for d in found]

    # Six dispatched and unclaimed: a queue of four may hold four of them, the rest are lost.
    assert due(4) == [5, 6, 7, 8, 9]  # the two longest waiting, and what is not a republish
    assert due(6) == due(100) == [7, 8, 9]
    assert due(0) == [1, 2, 3, 4, 5, 6, 7, 8, 9]  # nothing waits: every overdue one is lost
    assert due(1, budget=2) == [5, 6, 7, 8, 9]  # the pass's own bound still holds


def test_chunked_packs_consecutive_first_attempts_up_to_the_size() -> None:
    dispatches = [BranchDispatch(p, 1) for p in range(1, 24)]
    packed = chunked(dispatches, 10)
    assert [(d.position, d.count) for d in packed] == [(1, 10), (11, 10), (21, 3)]
    assert [p for d in packed for p in d.positions] == list(range(1, 24))
    assert chunked(dispatches, 1) == dispatches


def test_chunked_leaves_alone_what_may_not_share_a_message() -> None:
    dispatches = [
        BranchDispatch(1, 1),
        BranchDispatch(2, 1),
        BranchDispatch(3, 2),  # another attempt
        BranchDispatch(4, 2),
        BranchDispatch(6, 2),  # not the next position
        BranchDispatch(7, 2, countdown=1.5),  # not due yet
        BranchDispatch(8, 2),
        BranchDispatch(9, 2, poll=3),  # a child's poll
    ]
    packed = chunked(dispatches, 10)
    assert [(d.position, d.attempt, d.count) for d in packed] == [
        (1, 1, 2), (3, 2, 2), (6, 2, 1), (7, 2, 1), (8, 2, 1), (9, 2, 1),
    ]  # fmt: skip


def test_outcome_summary_reads_back_as_counts_per_outcome() -> None:
    summary = outcome_summary({"skipped": 1, "completed": 7, "published": 2})
    assert summary == "completed:7,published:2,skipped:1"
    assert summary_counts(summary) == {"completed": 7, "published": 2, "skipped": 1}
    assert summary_counts("stale") == {"stale": 1}  # a single branch's message
