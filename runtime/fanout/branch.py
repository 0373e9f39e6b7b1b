"""The branch task's work: what `fanfold.run_branch` does with one attempt of one branch.

claim (a `BranchClaim` through runtime.store.fanout.branch_writes: a conditional update, pending ->
running for exactly this attempt, only while the run is active, set-based with the other claims of
its batch) -> body -> a report (runtime.fanout.report), counted on the group row in the same
transaction -> after commit, the receipt's actions.

A fresh claim may be visible before it is durable (runtime.store.fanout.branch_claims); an
at-most-once step's claim is confirmed by a second claim that waits for the flush before its
body starts.

A duplicate delivery loses the claim and does nothing. A worker that dies mid-body stops
renewing the branch's lease; the fan-out sweep then publishes the next attempt, which may
claim a running step only once that lease has expired.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from runtime import conf
from runtime.core.branches import BranchAttempt, BranchClaim, ClaimedBranch, ClaimReceipt, Recorded
from runtime.core.clock import current_time
from runtime.core.current import StepInfo, current_step
from runtime.core.errors import FatalError
from runtime.durable.body import BodyCall, StepBody, is_async_callable
from runtime.fanout import async_branches
from runtime.fanout.children import drive_child, stop_abandoned_child
from runtime.fanout.report import record_outcome
from runtime.flow.ratelimit import branch_turn_later
from runtime.leases.keepers import branch_leases
from runtime.leases.liveness import process_key
from runtime.registry import registry, step_policy
from runtime.registry.table import AnyStep
from runtime.store.fanout.branch_writes import claim_branches


def branch_claim(branch: BranchAttempt, continuing: bool = False) -> BranchClaim:
    """A claim of `branch` by this process."""
    return BranchClaim(branch.run_id, branch.step_id, branch.attempt, continuing, process_key())


def _claim(branch: BranchAttempt, continuing: bool) -> ClaimReceipt:
    return claim_branches([branch_claim(branch, continuing)])[0]


def claim_branch(branch: BranchAttempt, *, continuing: bool = False) -> ClaimedBranch | None:
    """Take the branch for its attempt if it is still that attempt's to take; None otherwise.

    A fresh claim needs the step pending at the previous attempt, or running it with an expired
    lease (its worker died); a child's next poll (`continuing`) needs it running this attempt.
    Either way the run must be active: a cancelled run's steps never start. The claim is
    group-committed with the other branch threads' claims and reports: no other delivery
    wins this attempt. A fresh claim of an at-most-once step is confirmed durably before this
    returns; another one may be lost in a database crash, and the branch then runs again.
    """
    receipt = _claim(branch, continuing)
    if not receipt.won:
        return None
    confirm = not continuing and receipt.kind == "step" and _at_most_once(receipt.name)
    if confirm and not _claim(branch, continuing=True).won:  # waits for the flush of both
        return None
    return claimed_branch(receipt)


def claimed_branch(receipt: ClaimReceipt) -> ClaimedBranch | None:
    """What a committed claim hands its branch; None if it lost."""
    if not receipt.won:
        return None
    started_at = receipt.started_at or current_time()
    return ClaimedBranch(receipt.name, receipt.kind, receipt.input, started_at)


def _at_most_once(name: str) -> bool:
    fn = registry.steps.get(name)
    return fn is not None and fn.at_most_once


def run_branch(branch: BranchAttempt, poll: int = 0, traceparent: str | None = None) -> str:
    """Run one delivered branch attempt; says what happened ("skipped", "completed", ...).

    `traceparent` names the span that published the message: the attempt's span links to it.
    """
    claimed = claim_branch(branch, continuing=poll > 0)
    if claimed is None:
        if poll > 0:  # only child branches poll: the fan-out may have let this one go
            stop_abandoned_child(branch)
        return "skipped"
    return run_claimed(branch, claimed, poll, traceparent).label


@dataclass
class BodyTime:
    """Seconds spent in step bodies, summed over the branches of one chunk."""

    seconds: float = 0.0


def run_claimed(
    branch: BranchAttempt,
    claimed: ClaimedBranch,
    poll: int = 0,
    traceparent: str | None = None,
) -> Recorded:
    """Run a branch whose claim was won; says how it went."""
    if poll == 0 and claimed.kind == "step" and branch_turn_later(
        branch.run_id, branch.group_position, branch.position, branch.attempt, claimed.name,
        branch.priority,
    ):  # fmt: skip
        return Recorded("rate_limited")  # claim handed back, published again for its turn
    if claimed.kind == "child":
        args = list(claimed.input.get("args", []))
        kwargs = dict(claimed.input.get("kwargs", {}))
        return Recorded(drive_child(branch, poll, claimed, args, kwargs))
    fn = registry.steps.get(claimed.name)
    call = body_call(branch, claimed, fn)
    if fn is not None and is_async_callable(fn.fn):
        return Recorded(async_branches.start(branch, claimed, call, step_policy(fn), traceparent))
    branch_leases.hold(branch.lease_key)
    with StepBody(call, traceparent) as body:
        try:
            outcome = body.run(conf.get().MAX_PAYLOAD_BYTES)
        except BaseException:
            branch_leases.release(branch.lease_key)
            raise
        recorded = record_outcome(branch, claimed, outcome, step_policy(fn))
        body.outcome = recorded.label
    return recorded


def body_call(branch: BranchAttempt, claimed: ClaimedBranch, fn: AnyStep | None) -> BodyCall:
    """The call of a claimed step branch's body (`fn`: its registered step, if any)."""
    return BodyCall(
        StepInfo(branch.run_id, branch.position, claimed.name, branch.attempt),
        fn.fn if fn else _unregistered,
        list(claimed.input.get("args", [])),
        dict(claimed.input.get("kwargs", {})),
        f"step {claimed.name!r}",
        fn.timeout if fn else None,
    )


def plain_step(claimed: ClaimedBranch) -> AnyStep | None:
    """The claimed branch's step if its body may run right after the claim and report with
    others (runtime.fanout.chunk_window): a registered sync step, neither at most once nor
    rate-limited; None otherwise."""
    fn = registry.steps.get(claimed.name) if claimed.kind == "step" else None
    if fn is None or fn.at_most_once or fn.rate_limit is not None or is_async_callable(fn.fn):
        return None
    return fn


def _unregistered(*args: Any, **kwargs: Any) -> Any:
    step = current_step()
    raise FatalError(f"no step is registered as {step.name!r} in this worker")
