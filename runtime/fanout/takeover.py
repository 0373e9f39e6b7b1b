"""Takeover of interrupted at-most-once branch attempts: failed, never run again.

Both the fan-out sweep and a replay of the workflow find branches running with an expired
lease (their worker died). Their next attempt would normally take them over; an at-most-once
attempt that began and never reported is not run again: it counts as a failed attempt, and
the step's RetryPolicy decides what follows.
"""

from __future__ import annotations

import uuid

from django.utils import timezone

from runtime.core.errors import StepInterrupted
from runtime.core.fanin import BranchDispatch
from runtime.core.retry import DEFAULT_POLICY
from runtime.fanout.report import BranchAttempt, ClaimedBranch, report_failure
from runtime.registry import registry


def interrupt_at_most_once(
    run_id: uuid.UUID,
    group_position: int,
    running: dict[int, str],
    due: list[BranchDispatch],
) -> list[BranchDispatch]:
    """Of `due`, fail the takeovers of at-most-once branches instead; return the others.

    `running` maps the positions of branches seen running (with an expired lease) to their
    step names.
    """
    remaining: list[BranchDispatch] = []
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
        branch = BranchAttempt(run_id, d.position, attempt, group_position)
        claimed = ClaimedBranch(fn.name, "step", {}, now)
        report_failure(branch, claimed, exc, fn.retry or DEFAULT_POLICY, lease_expired_by=now)
    return remaining
