"""Fan-in rules of `ctx.all`: when a fan-out is decided, what it releases, what it returns.

Pure functions over counts and recorded branch states. The database side
(runtime.store.branch_reports) calls `after_batch` inside the completions' transaction with the
counters the group row returned; the workflow side (runtime.fanout.group) calls `settle` on
replay with the recorded steps.
Both reach the same verdict because a verdict depends only on (succeeded, failed).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

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


class Branch(Protocol):
    """What fan-in reads of one branch's step row: a `BranchState`, or replay's recorded step
    itself (a 100,000-branch fan-out's last pass need not copy every record)."""

    @property
    def position(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def attempt(self) -> int: ...
    @property
    def result(self) -> Any: ...
    @property
    def error(self) -> dict[str, Any] | None: ...
    @property
    def wake_at(self) -> datetime | None: ...


@dataclass(frozen=True, slots=True)
class BranchState:
    """What the history says about one branch (a step row of the group)."""

    position: int
    name: str
    status: str
    attempt: int = 0
    result: Any = None
    error: dict[str, Any] | None = None
    wake_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Failure:
    """A branch that failed or was cancelled, in place of its result."""

    position: int
    name: str
    error: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class Settled:
    verdict: str
    values: list[Any]  # results in branch order; Failure in place of failed/cancelled branches
    first_failure: Failure | None


def settle(
    rule: FanInRule, branches: Sequence[Branch], first_failure: int | None
) -> Settled | None:
    """The fan-out's outcome from its recorded branches, or None while it is undecided.

    `first_failure` is the position of the first failed branch in the event log (kept on the
    group row); without it the lowest failed position stands in.
    """
    succeeded = sum(1 for b in branches if b.status == "completed")
    failed = sum(1 for b in branches if b.status == "failed")
    verdict = rule.verdict(succeeded, failed)
    if verdict is None:
        return None
    values: list[Any] = []
    failures: list[Failure] = []
    for b in branches:
        if b.status == "completed":
            values.append(b.result)
            continue
        error = b.error if b.status == "failed" else (b.error or CANCELLED_ERROR)
        failure = Failure(b.position, b.name, error)
        values.append(failure)
        if b.status == "failed":
            failures.append(failure)
    first = next((f for f in failures if f.position == first_failure), None)
    return Settled(verdict, values, first or (failures[0] if failures else None))


@dataclass(frozen=True, slots=True)
class BranchDispatch:
    """Publish attempt `attempt` of the branch at `position`, after `countdown` seconds.

    `poll` counts a child branch's looks at its child run (0 for every other message).
    `count` > 1: one message carries the branches at `position` and the `count - 1` after it,
    all at this attempt (`chunked`), run one after another by the worker that takes it.
    """

    position: int
    attempt: int
    countdown: float = 0.0
    poll: int = 0
    count: int = 1

    @property
    def positions(self) -> range:
        return range(self.position, self.position + self.count)


def chunked(dispatches: Sequence[BranchDispatch], size: int) -> list[BranchDispatch]:
    """`dispatches` in messages of up to `size` branches: consecutive positions at the same
    attempt, due now and not a child's poll, share one; every other dispatch stays alone."""
    out: list[BranchDispatch] = []
    for d in dispatches:
        last = out[-1] if out else None
        if (
            last is not None
            and last.count < size
            and d.count == 1
            and d.position == last.position + last.count
            and d.attempt == last.attempt
            and d.countdown <= 0 and last.countdown <= 0
            and d.poll == 0 and last.poll == 0
        ):  # fmt: skip
            out[-1] = BranchDispatch(last.position, last.attempt, count=last.count + 1)
        else:
            out.append(d)
    return out


def outcome_summary(outcomes: Mapping[str, int]) -> str:
    """How the branches of one chunk went, as its task returns it: "completed:7,skipped:3"."""
    return ",".join(f"{name}:{n}" for name, n in sorted(outcomes.items()))


def summary_counts(summary: str) -> Counter[str]:
    """Branches per outcome in what a branch task returned: a chunk's "completed:7,published:2"
    counts 7 and 2 ("published": sent as messages of their own), one branch's "skipped" 1."""
    counts: Counter[str] = Counter()
    for part in summary.split(","):
        name, _, n = part.partition(":")
        counts[name] += int(n or 1)
    return counts


def due_dispatches(
    branches: Sequence[Branch],
    first_position: int,
    released: int,
    now: datetime,
    *,
    pending_grace: float,
    pending_budget: int | None = None,
    queued: int = 0,
) -> list[BranchDispatch]:
    """Branches whose message may be lost: publish them (again); a duplicate loses its claim.

    A released pending branch (index below `released`) gets its current attempt again at once
    if it has no dispatch time (its publish failed), else once its dispatch time is more than
    `pending_grace` seconds old, at most `pending_budget` of those (the longest waiting first;
    None: all); a retry not yet due keeps its countdown; a running branch whose lease expired
    (its worker died) is taken over by the next attempt.

    `queued` messages wait in the broker's queue, and each may be one of these branches': of
    the dispatched pending branches, only those beyond that many can be lost (or held in a
    worker's prefetch), so no more than that are published again.
    """
    grace = timedelta(seconds=pending_grace)
    due: list[BranchDispatch] = []
    lost: list[Branch] = []
    dispatched = 0
    for b in branches:
        if b.position - first_position >= released:
            continue
        if b.status == "pending":
            if b.wake_at is not None and b.wake_at > now:
                due.append(
                    BranchDispatch(b.position, b.attempt + 1, (b.wake_at - now).total_seconds())
                )
            elif b.wake_at is None:
                due.append(BranchDispatch(b.position, b.attempt + 1))
            else:
                dispatched += 1
                if b.wake_at + grace <= now:
                    lost.append(b)
        elif b.status == "running" and (b.wake_at is None or b.wake_at < now):
            due.append(BranchDispatch(b.position, b.attempt + 1))
    if queued > 0:
        beyond = max(dispatched - queued, 0)
        pending_budget = beyond if pending_budget is None else min(pending_budget, beyond)
    if pending_budget is not None and len(lost) > pending_budget:
        lost = sorted(lost, key=lambda b: b.wake_at or now)[: max(pending_budget, 0)]
    due += [BranchDispatch(b.position, b.attempt + 1) for b in lost]
    return sorted(due, key=lambda d: d.position)


def republished_pending(due: Sequence[BranchDispatch], branches: Sequence[Branch]) -> list[int]:
    """The positions of `due` that publish a pending branch's current attempt again now."""
    pending = {b.position for b in branches if b.status == "pending"}
    return [p for d in due if d.countdown <= 0 for p in d.positions if p in pending]


@dataclass(slots=True)
class BranchReceipt:
    """What the store did with a branch report, filled in after its transaction committed.

    `recorded` is False for a stale report (a duplicate, a cancelled or taken-over attempt):
    the caller then does nothing. `release` lists branch positions to publish, `wake` says the
    report settled the fan-out and the workflow must be enqueued (exactly one report does).
    """

    recorded: bool = False
    release: list[int] = field(default_factory=list)
    wake: bool = False


@dataclass(slots=True)
class ClaimReceipt:
    """What the store did with a branch claim, filled in after its transaction committed.

    `won` is True for exactly one claim of a step attempt: that caller runs the body. The other
    fields describe the claimed step (its registered name, kind, recorded input, start time).
    """

    won: bool = False
    name: str = ""
    kind: str = ""
    input: dict[str, Any] = field(default_factory=dict)
    started_at: datetime | None = None
