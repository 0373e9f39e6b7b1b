"""A chunk: one message carrying consecutive branches of a fan-out's first dispatch.

A broker message costs a Celery worker about as much as a no-op branch's claim and report
together, so a fan-out's first dispatch packs up to BRANCH_CHUNK branches a message
(runtime.fanout.group). The worker that takes a chunk runs its branches one after another,
each as a branch message of its own would run it (claim, body, report: runtime.fanout.branch),
except that the claim of the next branch is committed in the transaction of the previous
branch's report: one commit a branch instead of two.

Slow bodies must still spread over every worker: once the chunk's bodies have run
BRANCH_CHUNK_SECONDS (their own time: waiting for commits does not count, since a worker busy
with commits gains nothing by handing branches to workers as busy as itself), or a branch did
not simply complete (it failed, will retry, was handed back for its rate-limit turn or found
stale), the branches not yet claimed are published on their own and the chunk ends. A claim
that loses (a duplicate delivery: the branch ran already) skips that branch and claims the
next alone. A worker that dies mid-chunk leaves at most the branch it was running
claimed, which the takeover moves on as any branch's; the rest are pending, their message
unacknowledged (acks_late), so it comes back or the fan-out sweep publishes them again.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import replace

from publisher import PublishError
from runtime import conf
from runtime.core.branch_dispatch import BranchDispatch, outcome_summary
from runtime.core.branches import BranchAttempt, ClaimedBranch
from runtime.core.clock import current_time
from runtime.dispatch import publish_branches
from runtime.durable.body import is_async_callable
from runtime.fanout.branch import (
    BodyTime,
    branch_claim,
    claim_branch,
    claimed_branch,
    run_branch,
    run_claimed,
)
from runtime.registry import registry
from runtime.store.fanout.branch_writes import claim_branches
from runtime.store.fanout.fanout_groups import record_dispatch

log = logging.getLogger("fanfold.branches")


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
    budget, body_time = conf.get().BRANCH_CHUNK_SECONDS, BodyTime()
    outcomes: Counter[str] = Counter()
    branch, claimed = first, claim_branch(first)
    if claimed is not None and _async_step(claimed.name):
        return _start_async_chunk(first, count, claimed, traceparent)
    for index in range(1, count + 1):
        following = _at(first, index) if index < count else None
        if claimed is None:
            outcomes["skipped"] += 1
            if following is None:
                break
            branch, claimed = following, claim_branch(following)
            continue
        within = body_time.seconds < budget
        then = branch_claim(following) if following is not None and within else None
        recorded = run_claimed(
            branch, claimed, traceparent=traceparent, then=then, body_time=body_time
        )
        outcomes[recorded.label] += 1
        if following is None:
            break
        if recorded.following is None or recorded.label != "completed":
            outcomes["published"] += _publish_rest(first, index, count)
            break
        branch, claimed = following, claimed_branch(recorded.following)
    return outcome_summary(outcomes)


def _async_step(name: str) -> bool:
    fn = registry.steps.get(name)
    return fn is not None and is_async_callable(fn.fn)


def _start_async_chunk(
    first: BranchAttempt, count: int, claimed: ClaimedBranch, traceparent: str | None
) -> str:
    """Async bodies run side by side, not in turn: the rest of the chunk is claimed in one
    commit and every won branch goes to the worker loop (runtime.fanout.async_branches)."""
    rest = [_at(first, index) for index in range(1, count)]
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


def _at(first: BranchAttempt, index: int) -> BranchAttempt:
    return replace(first, position=first.position + index)


def _publish_rest(first: BranchAttempt, start: int, count: int) -> int:
    """Publish the branches from index `start` on their own; returns how many."""
    positions = [first.position + i for i in range(start, count)]
    dispatches = [BranchDispatch(p, first.attempt) for p in positions]
    try:
        publish_branches(first.run_id, first.group_position, dispatches, first.priority)
    except PublishError:
        # Their first dispatch is void: the fan-out sweep publishes them at its next look.
        record_dispatch(first.run_id, positions, None)
        log.warning("run %s: publishing branches %s failed; the sweep retries", first.run_id,
                    positions, exc_info=True)  # fmt: skip
        return 0
    record_dispatch(first.run_id, positions, current_time())  # their lost-message clock
    return len(positions)
