"""A chunk: one message carrying consecutive branches of a fan-out's first dispatch.

A broker message costs a Celery worker about as much as a no-op branch's claim and report
together, so a fan-out's first dispatch packs up to BRANCH_CHUNK branches a message
(runtime.fanout.group). The worker that takes a chunk claims its first branch, then runs its
branches in windows (runtime.fanout.chunk_window): each commit carries the reports of the
bodies just run and the claims of the next window, so a chunk of fast bodies commits a couple
of times, not once a branch.

Slow bodies must still spread over every worker: once the chunk's bodies have run
BRANCH_CHUNK_SECONDS (their own time: waiting for commits does not count, since a worker busy
with commits gains nothing by handing branches to workers as busy as itself), or a branch did
not simply complete (it failed, will retry, was handed back for its rate-limit turn or found
stale), the branches not started are published on their own and the chunk ends. A claim
that loses (a duplicate delivery: the branch ran already) skips that branch. A worker that
dies mid-chunk leaves the branches of its window claimed, which the takeover moves on as any
branch's once their leases expire (a window's bodies are not at most once: a chunk carries
none); the rest are pending, their message unacknowledged (acks_late), so it comes back or
the fan-out sweep publishes them again.
"""

from __future__ import annotations

from collections import Counter

from runtime.core.branch_dispatch import outcome_summary
from runtime.core.branches import BranchAttempt, ClaimedBranch
from runtime.durable.body import is_async_callable
from runtime.fanout.branch import (
    branch_claim,
    claim_branch,
    claimed_branch,
    run_branch,
    run_claimed,
)
from runtime.fanout.chunk_window import ChunkRun, branch_at
from runtime.registry import registry
from runtime.store.fanout.branch_writes import claim_branches


def run_message(
    first: BranchAttempt, count: int = 1, poll: int = 0, traceparent: str | None = None
) -> str:
    """Run what one branch message carries: the chunk of `count` branches from `first`, or the
    one branch (at its child-poll `poll`)."""
    if count > 1:
        return run_chunk(first, count, traceparent)
    return run_branch(first, poll, traceparent)


def run_chunk(first: BranchAttempt, count: int, traceparent: str | None = None) -> str:
    """Run the `count` branches from `first` at its attempt; says how each went, as
    "completed:10" or "completed:7,published:2,skipped:1" ("published": sent on its own)."""
    claimed = claim_branch(first)
    if claimed is not None and _async_step(claimed.name):
        return _start_async_chunk(first, count, claimed, traceparent)
    return ChunkRun(first, count, traceparent).run(claimed)


def _async_step(name: str) -> bool:
    fn = registry.steps.get(name)
    return fn is not None and is_async_callable(fn.fn)


def _start_async_chunk(
    first: BranchAttempt, count: int, claimed: ClaimedBranch, traceparent: str | None
) -> str:
    """Async bodies run side by side, not in turn: the rest of the chunk is claimed in one
    commit and every won branch goes to the worker loop (runtime.fanout.async_branches)."""
    rest = [branch_at(first, index) for index in range(1, count)]
    receipts = claim_branches([branch_claim(branch) for branch in rest])
    outcomes: Counter[str] = Counter()
    outcomes[run_claimed(first, claimed, traceparent=traceparent).label] += 1
    for branch, receipt in zip(rest, receipts, strict=True):
        won = claimed_branch(receipt)
        if won is None:
            outcomes["skipped"] += 1
        else:
            outcomes[run_claimed(branch, won, traceparent=traceparent).label] += 1
    return outcome_summary(outcomes)
