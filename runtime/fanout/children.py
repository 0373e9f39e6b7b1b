"""Child-workflow branches: a branch whose body is a whole run of another workflow.

The child is started with a derived idempotency key, so a redelivery or a takeover finds the
same child. Until it finishes, the branch polls it with growing delays.
"""

from __future__ import annotations

from contextlib import suppress
from typing import Any

from runtime.core.branches import BranchAttempt, ClaimedBranch
from runtime.core.errors import ChildFailed, FanfoldError, RunAlreadyFinished, describe_exception
from runtime.core.identity import child_run_key
from runtime.dispatch import publish_later
from runtime.fanout.report import finish
from runtime.models import RunStatus, StepStatus
from runtime.services import cancel_run, start_run
from runtime.store.runs.children import (
    active_runs_with_key,
    run_has_finished,
    run_owner,
    step_status,
)
from runtime.versions import routing as version_routing

CHILD_POLL_MAX = 1.0  # seconds between looks at a child run that has not finished


def drive_child(
    branch: BranchAttempt,
    poll: int,
    claimed: ClaimedBranch,
    args: list[Any],
    kwargs: dict[str, Any],
) -> str:
    """Start (once) the child run of a child branch and report when it has finished."""
    run_id = branch.run_id
    try:
        # A child runs at its parent's priority and belongs to its owner: it is the parent's
        # work. Its key is in the runtime's own namespace, which no caller can use.
        owner = run_owner(run_id)
        child, _ = start_run(
            claimed.name, args, kwargs, runtime_key=child_run_key(run_id, branch.position),
            priority=branch.priority, owner=owner, app_version=version_routing.version_of(run_id),
        )  # fmt: skip
    except FanfoldError as exc:  # unknown workflow, bad arguments: the branch fails for good
        error = describe_exception(exc)
        finish(branch, claimed, "failed", error=error, reason="child not started")
        return "failed"
    if run_has_finished(run_id):
        # The parent was cancelled while this child was being started: stop the child too.
        with suppress(RunAlreadyFinished):
            cancel_run(child.id, reason=f"parent run {run_id} was cancelled")
    child.refresh_from_db(fields=["status", "result", "error"])
    if child.status == RunStatus.COMPLETED:
        finish(branch, claimed, "completed", result=child.result)
        return "completed"
    if child.status in (RunStatus.FAILED, RunStatus.CANCELLED):
        cause = child.error or {
            "type": "RunCancelled",
            "message": f"child run {child.id} was cancelled",
        }
        error = {
            "type": ChildFailed.__name__,
            "message": f"child run {child.id} {child.status}: "
            f"{cause.get('type')}: {cause.get('message')}",
            "child_run": str(child.id),
        }
        finish(branch, claimed, "failed", error=error, reason=f"child {child.status}")
        return "failed"
    # 0.05 s doubling up to the cap; past 2**10 the cap (a float cannot hold 2**1100).
    delay = min(0.05 * 2 ** min(poll, 10), CHILD_POLL_MAX)
    publish_later(
        run_id, branch.group_position, branch.position, branch.attempt, delay, poll + 1,
        priority=branch.priority,
    )  # fmt: skip
    return "polling"


def stop_abandoned_child(branch: BranchAttempt) -> None:
    """Cancel the child run of a branch its fan-out cancelled (decided early without it).

    Called when a child branch's next poll finds its step no longer running: if the fan-out
    cancelled it (`min_successful` reached, too many failures), nobody will use the child's
    result, so the child stops instead of running on to its end.
    """
    if step_status(branch.run_id, branch.step_id) != StepStatus.CANCELLED:
        return
    key = child_run_key(branch.run_id, branch.position)
    for child_id in active_runs_with_key(run_owner(branch.run_id), key):
        with suppress(RunAlreadyFinished):  # it finished meanwhile: nothing to stop
            cancel_run(child_id, reason=f"the fan-out of run {branch.run_id} was decided")
