"""Publishing a fan-out's branches: dispatches, their chunks, the sweep's choice of what is due
again, and the one-line outcome summary a chunk reports."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from runtime.core.settle import Branch


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
