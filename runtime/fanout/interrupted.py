"""Takeover of interrupted at-most-once branch attempts: failed, never run again.

The fan-out sweep, a replay of the workflow and the takeover pass
(runtime.recovery.dead_processes) find
branches running with an expired lease (their worker died). Their next attempt would
normally take them over; an at-most-once attempt that began and never reported is not run
again: it counts as a failed attempt, and the step's RetryPolicy decides what follows.
"""

from __future__ import annotations

import uuid

from runtime.core.branch_dispatch import BranchDispatch
from runtime.core.branches import BranchAttempt, ClaimedBranch
from runtime.core.clock import current_time
from runtime.core.errors import StepInterrupted
from runtime.dispatch import publish_branches
from runtime.fanout.report import report_failure
from runtime.registry import registry, step_policy
from runtime.store.fanout.fanout_sweeps import open_group_spans, running_branches


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
        now = current_time()
        branch = BranchAttempt(run_id, d.position, attempt, group_position)
        claimed = ClaimedBranch(fn.name, "step", {}, now)
        report_failure(branch, claimed, exc, step_policy(fn), lease_expired_by=now)
    return remaining


def publish_next_attempts(ended: list[tuple[uuid.UUID, uuid.UUID]]) -> int:
    """Publish the next attempt of these running branches (run id, step id), whose leases
    just ended (their process died); at-most-once ones are failed instead. Returns how many
    were published."""
    rows = running_branches(ended)
    by_run: dict[tuple[uuid.UUID, int], list[tuple[int, str, int]]] = {}
    for run_id, priority, position, name, attempt in rows:
        by_run.setdefault((run_id, priority), []).append((position, name, attempt))
    published = 0
    for (run_id, priority), branches in by_run.items():  # highest priority first
        for group_position, total in open_group_spans(run_id):
            mine = [b for b in branches if group_position <= b[0] < group_position + total]
            running = {position: name for position, name, _ in mine}
            due = [BranchDispatch(position, attempt + 1) for position, _, attempt in mine]
            due = interrupt_at_most_once(run_id, group_position, running, due)
            if due:
                publish_branches(run_id, group_position, due, priority)
                published += len(due)
    return published
