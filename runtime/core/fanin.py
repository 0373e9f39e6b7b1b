"""Fan-in rules of `ctx.all`: when a fan-out is decided, what it releases, what it returns.

Pure functions over counts and recorded branch states. The database side
(runtime.store.fanout.branch_reports) calls `after_batch` inside the completions' transaction with
the counters the group row returned; the workflow side (runtime.fanout.group) calls `settle` on
replay with the recorded steps.
Both reach the same verdict because a verdict depends only on (succeeded, failed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

SUCCEEDED, FAILED = "succeeded", "failed"

CANCELLED_ERROR: dict[str, Any] = {
    "type": "BranchCancelled",
    "message": "the fan-out was decided before this branch finished",
}


@dataclass(frozen=True, slots=True)
class FanInRule:
    """When a fan-out of `total` branches is decided.

    It fails as soon as more than `failure_limit` branches failed; it succeeds as soon as
    `need` branches succeeded (None: once every branch finished without failing it).
    """

    total: int
    need: int | None
    failure_limit: int

    @classmethod
    def resolve(
        cls,
        total: int,
        *,
        min_successful: int | None = None,
        tolerated_failures: int | None = None,
        return_exceptions: bool = False,
    ) -> FanInRule:
        """The rule for `ctx.all(..., min_successful=, tolerated_failures=, return_exceptions=)`.

        Without either count a failure decides at once (Promise.all), unless return_exceptions
        asks to wait for every branch (asyncio.gather).
        """
        if total < 0:
            raise ValueError("a fan-out cannot have a negative number of branches")
        for name, value in (
            ("min_successful", min_successful),
            ("tolerated_failures", tolerated_failures),
        ):
            if value is not None and (
                not isinstance(value, int) or isinstance(value, bool) or value < 0
            ):
                raise ValueError(f"{name} must be a non-negative integer")
        if min_successful is not None and min_successful > total:
            raise ValueError(f"min_successful={min_successful} is more than the {total} branches")
        limits = []
        if tolerated_failures is not None:
            limits.append(tolerated_failures)
        if min_successful is not None:
            limits.append(total - min_successful)  # more failures make `need` unreachable
        if not limits:
            limits.append(total if return_exceptions else 0)
        return cls(total, min_successful, min(limits))

    def verdict(self, succeeded: int, failed: int) -> str | None:
        """SUCCEEDED, FAILED, or None while undecided."""
        if failed > self.failure_limit:
            return FAILED
        if self.need is not None and succeeded >= self.need:
            return SUCCEEDED
        if succeeded + failed >= self.total:
            return SUCCEEDED
        return None


@dataclass(frozen=True, slots=True)
class GroupCounts:
    """A group row's counters after a completion's increment."""

    total: int
    released: int
    succeeded: int
    failed: int


@dataclass(frozen=True, slots=True)
class FanInStep:
    """What one transaction of completions does to its group."""

    verdict: str | None
    release: range  # branch indexes to publish after commit


def after_finish(rule: FanInRule, counts: GroupCounts, finished: int) -> FanInStep:
    """Decide the group after `finished` branches finished for good (counts already include them).

    Each finished branch frees one slot of the concurrency window, unless the fan-out is decided:
    then nothing more is released.
    """
    verdict = rule.verdict(counts.succeeded, counts.failed)
    if verdict is not None:
        return FanInStep(verdict, range(0))
    released = min(counts.total, counts.released + finished)
    return FanInStep(None, range(counts.released, released))


@dataclass(frozen=True, slots=True)
class BatchStep:
    """What one batch of recorded reports of a group does to it, as if applied one by one.

    The first `accepted` reports stand. Once a report decides the group, those after it came
    too late: like a report arriving after the settle, they are cancelled, not counted.
    """

    accepted: int
    verdict: str | None
    release: range  # branch indexes to publish after commit
    counts: GroupCounts  # after the accepted reports


def after_batch(rule: FanInRule, before: GroupCounts, outcomes: Sequence[str]) -> BatchStep:
    """Decide the group after reports with these outcomes, in event-log order.

    `before` holds the counters without this batch. "retrying" outcomes do not count; each
    finished branch frees one slot of the concurrency window unless the group is decided.
    """
    succeeded, failed, finished = before.succeeded, before.failed, 0
    for index, outcome in enumerate(outcomes):
        if outcome == "retrying":
            continue
        finished += 1
        if outcome == "completed":
            succeeded += 1
        else:
            failed += 1
        verdict = rule.verdict(succeeded, failed)
        if verdict is not None:
            counts = GroupCounts(before.total, before.released, succeeded, failed)
            return BatchStep(index + 1, verdict, range(0), counts)
    counts = GroupCounts(before.total, before.released, succeeded, failed)
    return BatchStep(len(outcomes), None, after_finish(rule, counts, finished).release, counts)


def initial_release(total: int, max_concurrency: int | None) -> int:
    """How many branches leave when the fan-out starts."""
    if max_concurrency is None:
        return total
    if (
        not isinstance(max_concurrency, int)
        or isinstance(max_concurrency, bool)
        or max_concurrency < 1
    ):
        raise ValueError("max_concurrency must be a positive integer or None")
    return min(total, max_concurrency)
