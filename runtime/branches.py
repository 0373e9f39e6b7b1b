"""The branch executor: what `fanfold.run_branch` does with one attempt of one fan-out branch.

claim (a `BranchClaim` through the checkpoint writer: a conditional update, pending -> running
for exactly this attempt, only while the run is active, set-based with the other claims of its
batch) -> body -> a `BranchReport` through the checkpoint writer, counted on the group row in
the same transaction -> after commit, the receipt's actions: publish the branches
the completion released, enqueue the workflow if this completion settled the fan-out.

A duplicate delivery loses the claim and does nothing. A worker that dies mid-body stops
renewing the branch's lease (`Step.wake_at` while running); the fan-out sweep then publishes
the next attempt, which may claim a running step only once that lease has expired.
"""

from __future__ import annotations

import logging
import threading
import uuid
from contextlib import suppress
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from publisher import PublishError
from runtime import conf
from runtime.branch_dispatch import publish_branches, publish_later
from runtime.branch_leases import leases
from runtime.checkpoint.batching import Checkpoint
from runtime.core.errors import FanfoldError, FatalError, RunAlreadyFinished, describe_exception
from runtime.core.fanin import BranchReceipt, Dispatch
from runtime.core.identity import child_run_key, step_id
from runtime.core.jsonvalues import checked, encoded_size
from runtime.core.retry import DEFAULT_POLICY, GiveUp, RetryPolicy, decide
from runtime.core.writes import BranchClaim, BranchReport
from runtime.models import Run, RunStatus
from runtime.registry import registry
from runtime.stepinfo import StepInfo, running
from runtime.store import writer

log = logging.getLogger("fanfold.branches")

CHILD_POLL_MAX = 1.0  # seconds between looks at a child run that has not finished


class ChildFailed(FanfoldError):
    code = "child_failed"


@dataclass(frozen=True)
class Claimed:
    name: str
    kind: str
    input: dict[str, Any]
    started_at: datetime


def group_id(run_id: uuid.UUID, first_position: int) -> uuid.UUID:
    """The fan-out group's id: derived, so a replayed fan-out names the same row."""
    return uuid.uuid5(step_id(run_id, first_position), "fanout")


def claim(
    run_id: uuid.UUID, position: int, attempt: int, *, continuing: bool = False
) -> Claimed | None:
    """Take the branch for `attempt` if it is still this attempt's to take; None otherwise.

    A fresh claim needs the step pending at the previous attempt, or running it with an expired
    lease (its worker died); a child's next poll (`continuing`) needs it running this attempt.
    Either way the run must be active: a cancelled run's steps never start. The claim is
    group-committed with the other branch threads' claims and reports, and is durable when
    this returns: the body runs at most once per attempt.
    """
    payload = BranchClaim(run_id, step_id(run_id, position), attempt, continuing)
    session = f"claim/{payload.step_id}/{attempt}/{threading.get_ident()}"
    w = writer()
    try:
        w.write(Checkpoint(session=session, payload=payload, size=64, sync=True))
    finally:
        w.reset_session(session)
    receipt = payload.receipt
    if not receipt.won:
        return None
    return Claimed(receipt.name, receipt.kind, receipt.input, receipt.started_at or timezone.now())


def run_branch(
    run_id: uuid.UUID, position: int, attempt: int, group_first: int, poll: int = 0
) -> str:
    """Run one delivered branch attempt; returns what happened ("skipped", "completed", ...)."""
    claimed = claim(run_id, position, attempt, continuing=poll > 0)
    if claimed is None:
        return "skipped"
    args = list(claimed.input.get("args", []))
    kwargs = dict(claimed.input.get("kwargs", {}))
    if claimed.kind == "child":
        return _drive_child(run_id, position, attempt, group_first, poll, claimed, args, kwargs)
    fn = registry.steps.get(claimed.name)
    policy = (fn.retry if fn is not None else None) or DEFAULT_POLICY
    sid = step_id(run_id, position)
    leases.hold(sid)
    try:
        try:
            if fn is None:
                raise FatalError(f"no step is registered as {claimed.name!r} in this worker")
            with running(StepInfo(run_id, position, claimed.name, attempt)):
                raw = fn.fn(*args, **kwargs)
            result, size = checked(
                raw, f"step {claimed.name!r} result", conf.get().MAX_PAYLOAD_BYTES
            )
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # every failure of user code is recorded
            return _report_failure(run_id, position, attempt, group_first, claimed, exc, policy)
        report = _report(
            run_id, position, attempt, group_first, claimed, "completed", result=result, size=size
        )
    finally:
        leases.release(sid)
    _after_commit(run_id, group_first, report)
    return "completed" if report.receipt.recorded else "stale"


def _report(
    run_id: uuid.UUID,
    position: int,
    attempt: int,
    group_first: int,
    claimed: Claimed,
    outcome: str,
    size: int | None = None,
    **values: Any,
) -> BranchReport:
    """Commit one attempt's outcome (`size`: its result's JSON bytes, if already measured)."""
    report = BranchReport(
        run_id=run_id,
        step_id=step_id(run_id, position),
        position=position,
        group_id=group_id(run_id, group_first),
        attempt=attempt,
        outcome=outcome,
        started_at=claimed.started_at,
        finished_at=timezone.now(),
        **values,
    )
    session = f"branch/{report.step_id}/{attempt}"
    if size is None:
        size = encoded_size(report.result) if report.result is not None else 0
    w = writer()
    try:
        w.write(Checkpoint(session=session, payload=report, size=256 + size, sync=True))
    finally:
        w.reset_session(session)
    return report


def _finish(
    run_id: uuid.UUID,
    position: int,
    attempt: int,
    group_first: int,
    claimed: Claimed,
    outcome: str,
    **values: Any,
) -> BranchReport:
    """Commit a final outcome, then carry out its receipt (release, resume)."""
    report = _report(run_id, position, attempt, group_first, claimed, outcome, **values)
    _after_commit(run_id, group_first, report)
    return report


def _report_failure(
    run_id: uuid.UUID,
    position: int,
    attempt: int,
    group_first: int,
    claimed: Claimed,
    exc: BaseException,
    policy: RetryPolicy,
    lease_expired_by: datetime | None = None,
) -> str:
    error = describe_exception(exc)
    decision = decide(policy, attempt, exc)
    if isinstance(decision, GiveUp):
        report = _finish(
            run_id, position, attempt, group_first, claimed, "failed", error=error,
            reason=decision.reason, lease_expired_by=lease_expired_by,
        )  # fmt: skip
        return "failed" if report.receipt.recorded else "stale"
    wake_at = timezone.now() + timedelta(seconds=decision.delay)
    report = _report(
        run_id, position, attempt, group_first, claimed, "retrying", error=error, wake_at=wake_at,
        lease_expired_by=lease_expired_by,
    )  # fmt: skip
    if report.receipt.recorded:
        publish_later(run_id, group_first, position, attempt + 1, decision.delay)
    return "retrying" if report.receipt.recorded else "stale"


def interrupt_at_most_once(
    run_id: uuid.UUID, group_first: int, running: dict[int, str], due: list[Dispatch]
) -> list[Dispatch]:
    """Of `due`, fail the takeovers of at-most-once branches instead; return the others.

    `running` maps the positions of branches seen running (with an expired lease) to their step
    names. An at-most-once attempt that began and never reported is not run again: it counts as
    a failed attempt, and the step's RetryPolicy decides what follows.
    """
    from runtime.context import StepInterrupted

    remaining: list[Dispatch] = []
    for d in due:
        fn = registry.steps.get(running.get(d.position, ""))
        if fn is None or not fn.at_most_once:
            remaining.append(d)
            continue
        attempt = d.attempt - 1
        exc = StepInterrupted(
            f"attempt {attempt} of at-most-once step {fn.name!r} was interrupted; "
            "it is not run again"
        )
        now = timezone.now()
        claimed = Claimed(fn.name, "step", {}, now)
        policy = fn.retry or DEFAULT_POLICY
        _report_failure(
            run_id, d.position, attempt, group_first, claimed, exc, policy, lease_expired_by=now
        )
    return remaining


def _after_commit(run_id: uuid.UUID, group_first: int, report: BranchReport) -> None:
    """The receipt's actions: release the next branches, resume the workflow once."""
    receipt: BranchReceipt = report.receipt
    if receipt.release:
        try:
            publish_branches(run_id, group_first, [Dispatch(p, 1) for p in receipt.release])
        except PublishError:
            # The release is committed; the fan-out sweep republishes what did not leave.
            log.warning(
                "run %s: releasing %s failed; the sweep retries",
                run_id,
                receipt.release,
                exc_info=True,
            )
    if receipt.wake:
        from runtime.dispatch import enqueue_run

        # If this is lost, Run.wake_at (set with the settle) lets the recovery sweep do it.
        enqueue_run(run_id)


def _drive_child(
    run_id: uuid.UUID,
    position: int,
    attempt: int,
    group_first: int,
    poll: int,
    claimed: Claimed,
    args: list[Any],
    kwargs: dict[str, Any],
) -> str:
    """Start (once) the child run of a child branch and report when it has finished.

    The child is started with a derived idempotency key, so a redelivery or a takeover finds
    the same child. Until it finishes, the branch polls it with growing delays.
    """
    from runtime.services import cancel_run, start_run

    try:
        child, _ = start_run(
            claimed.name, args, kwargs, idempotency_key=child_run_key(run_id, position)
        )
    except FanfoldError as exc:  # unknown workflow, bad arguments: the branch fails for good
        error = describe_exception(exc)
        _finish(
            run_id, position, attempt, group_first, claimed, "failed", error=error,
            reason="child not started",
        )  # fmt: skip
        return "failed"
    if Run.objects.finished().filter(id=run_id).exists():
        # The parent was cancelled while this child was being started: stop the child too.
        with suppress(RunAlreadyFinished):
            cancel_run(child.id, reason=f"parent run {run_id} was cancelled")
    child.refresh_from_db(fields=["status", "result", "error"])
    if child.status == RunStatus.COMPLETED:
        report = _finish(
            run_id, position, attempt, group_first, claimed, "completed", result=child.result
        )
    elif child.status in (RunStatus.FAILED, RunStatus.CANCELLED):
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
        report = _finish(
            run_id, position, attempt, group_first, claimed, "failed", error=error,
            reason=f"child {child.status}",
        )  # fmt: skip
    else:
        publish_later(
            run_id, group_first, position, attempt, min(0.05 * 2**poll, CHILD_POLL_MAX), poll + 1
        )
        return "polling"
    return "completed" if report.outcome == "completed" else "failed"
