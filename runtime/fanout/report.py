"""A branch attempt's outcome: recorded (runtime.store.fanout.branch_writes), then acted on.

The attempt, its report and the receipts are the fan-out write path's types
(runtime.core.branches). A `BranchReport` is counted on its group in the same transaction
(runtime.store.fanout.branch_reports); the receipt `record_reports` returns says whether it
was recorded (a stale report is not), which branches its completion released and whether it
settled the fan-out.
After the commit the receipt's actions run: publish the released branches, enqueue the
workflow once."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from publisher import PublishError
from runtime.core.branch_dispatch import BranchDispatch
from runtime.core.branches import (
    BranchAttempt,
    BranchClaim,
    BranchReceipt,
    BranchReport,
    ClaimedBranch,
    ClaimReceipt,
    Recorded,
)
from runtime.core.clock import current_time
from runtime.core.errors import describe_exception
from runtime.core.jsonvalues import encoded_size
from runtime.core.retry import GiveUp, RetryPolicy, decide
from runtime.dispatch import enqueue_run, publish_branches, publish_later
from runtime.durable.body import BodyOutcome
from runtime.leases.keepers import branch_leases
from runtime.store.fanout.branch_writes import ReportReceipts, record_reports
from runtime.store.fanout.fanout_groups import record_dispatch

log = logging.getLogger("fanfold.branches")


def report(
    branch: BranchAttempt,
    claimed: ClaimedBranch,
    outcome: str,
    size: int | None = None,
    **values: Any,
) -> BranchReceipt:
    """Commit one attempt's outcome (`size`: its result's JSON bytes, if already measured);
    returns its receipt."""
    return record_reports([branch_report(branch, claimed, outcome, size, **values)]).reports[0]


def branch_report(
    branch: BranchAttempt, claimed: ClaimedBranch, outcome: str, size: int | None, **values: Any
) -> BranchReport:
    """The report of one attempt's outcome."""
    if size is None:
        result = values.get("result")
        size = encoded_size(result) if result is not None else 0
    return BranchReport(
        run_id=branch.run_id,
        step_id=branch.step_id,
        position=branch.position,
        group_id=branch.group_id,
        attempt=branch.attempt,
        outcome=outcome,
        started_at=claimed.started_at,
        finished_at=current_time(),
        result_bytes=size,
        **values,
    )


def finish(
    branch: BranchAttempt, claimed: ClaimedBranch, outcome: str, **values: Any
) -> BranchReceipt:
    """Commit a final outcome, then carry out its receipt (release, resume)."""
    receipt = report(branch, claimed, outcome, **values)
    after_commit(branch, receipt)
    return receipt


def report_failure(
    branch: BranchAttempt,
    claimed: ClaimedBranch,
    exc: BaseException,
    policy: RetryPolicy,
    lease_expired_by: datetime | None = None,
) -> str:
    """Record a failed attempt: for good, or a retry published after its delay."""
    error = describe_exception(exc)
    decision = decide(policy, branch.attempt, exc)
    if isinstance(decision, GiveUp):
        receipt = finish(
            branch, claimed, "failed", error=error, reason=decision.reason,
            lease_expired_by=lease_expired_by,
        )  # fmt: skip
        return "failed" if receipt.recorded else "stale"
    wake_at = current_time() + timedelta(seconds=decision.delay)
    receipt = report(
        branch, claimed, "retrying", error=error, wake_at=wake_at,
        lease_expired_by=lease_expired_by,
    )  # fmt: skip
    if not receipt.recorded:
        return "stale"
    publish_later(
        branch.run_id, branch.group_position, branch.position, branch.attempt + 1, decision.delay,
        priority=branch.priority,
    )  # fmt: skip
    return "retrying"


def after_commit(branch: BranchAttempt, receipt: BranchReceipt) -> None:
    """The receipt's actions: release the next branches, resume the workflow once."""
    if receipt.release:
        try:
            dispatches = [BranchDispatch(p, 1) for p in receipt.release]
            publish_branches(branch.run_id, branch.group_position, dispatches, branch.priority)
        except PublishError:
            # The release is committed; the fan-out sweep republishes what did not leave.
            record_dispatch(branch.run_id, receipt.release, None)
            log.warning(
                "run %s: releasing %s failed; the sweep retries",
                branch.run_id,
                receipt.release,
                exc_info=True,
            )
    if receipt.wake:
        # If this is lost, Run.wake_at (set with the settle) lets the recovery sweep do it.
        enqueue_run(branch.run_id, priority=branch.priority)


def record_outcome(
    branch: BranchAttempt,
    claimed: ClaimedBranch,
    outcome: BodyOutcome,
    policy: RetryPolicy,
) -> Recorded:
    """Report how a claimed step branch's body ended and act on the receipt; says how it went
    ("completed", "stale", or a failure's "retrying"/"failed"). The branch's lease, held since
    its claim, is given back once the report is written."""
    try:
        if outcome.error is not None:
            return Recorded(report_failure(branch, claimed, outcome.error, policy))
        completed = branch_report(branch, claimed, "completed", outcome.size, result=outcome.result)
        written = record_reports([completed])
    finally:
        branch_leases.release(branch.lease_key)
    receipt = written.reports[0]
    after_commit(branch, receipt)
    return Recorded("completed" if receipt.recorded else "stale")


def record_completions(
    completed: Sequence[tuple[BranchAttempt, ClaimedBranch, BodyOutcome]],
) -> list[str]:
    """`record_outcome` for many completed bodies at once: their reports commit together
    (one batch, unless its limits cut it), then each receipt is acted on. The branches' leases
    are given back once the reports are written; says how each went."""
    reports = [
        (branch, branch_report(branch, claimed, "completed", outcome.size, result=outcome.result))
        for branch, claimed, outcome in completed
    ]
    return record_window(reports).labels


@dataclass(frozen=True)
class WindowReceipts:
    """What `record_window` did: how each completed branch went, each claim's receipt."""

    labels: list[str]
    claims: list[ClaimReceipt]


def record_window(
    completed: Sequence[tuple[BranchAttempt, BranchReport]], then: Sequence[BranchClaim] = ()
) -> WindowReceipts:
    """Commit the reports of completed branches (made as each body ended) with the claims
    `then` (a chunk's next branches: runtime.fanout.chunk_window), then act on each receipt.
    The branches' leases are given back once the reports are written."""
    written = commit_window(completed, then)
    return WindowReceipts(act_on_window(completed, written), written.claims)


def commit_window(
    completed: Sequence[tuple[BranchAttempt, BranchReport]], then: Sequence[BranchClaim] = ()
) -> ReportReceipts:
    """`record_window`'s commit alone (a window's waiting reports, committed by another
    thread while a body runs: runtime.fanout.window_flush); the leases are given back once
    the reports are written, or the write failed."""
    try:
        return record_reports([report for _, report in completed], then)
    finally:
        for branch, _ in completed:
            branch_leases.release(branch.lease_key)


def act_on_window(
    completed: Sequence[tuple[BranchAttempt, BranchReport]], written: ReportReceipts
) -> list[str]:
    """Act on the receipts of committed reports; says how each branch went."""
    labels = []
    for (branch, _), receipt in zip(completed, written.reports, strict=True):
        after_commit(branch, receipt)
        labels.append("completed" if receipt.recorded else "stale")
    return labels
