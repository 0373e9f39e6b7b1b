"""The fan-out recovery sweep: no branch is stranded by a lost message or a dead worker.

Redis keeps a message that a killed worker had taken unacknowledged for the broker's whole
visibility timeout, so the runtime does not wait for it: every open group is looked at about
every lease period. A running branch whose lease expired is taken over by its next attempt;
a released pending branch whose message is long overdue is published again. Duplicates are
harmless: every delivery must win the step's claim first.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial

from publisher import PublishError
from runtime import conf
from runtime.core.branch_dispatch import BranchDispatch, due_dispatches, republished_pending
from runtime.core.clock import current_time
from runtime.core.settle import BranchState
from runtime.core.versions import UNPINNED
from runtime.dispatch import publish_branches
from runtime.fanout.interrupted import interrupt_at_most_once
from runtime.models import ACTIVE_RUN_STATES, StepStatus
from runtime.process.background import BackgroundLoop
from runtime.registry import versions
from runtime.store.fanout.fanout_groups import record_dispatch
from runtime.store.fanout.fanout_sweeps import (
    last_claim,
    overdue_branches,
    stop_checking_group,
    take_due_groups,
)
from runtime.versions.depth import served_queue_depth

log = logging.getLogger("fanfold.fanout_sweep")


def _interval() -> float:
    settings = conf.get()
    return max(settings.SWEEP_INTERVAL, settings.LEASE_SECONDS / 2)


# While messages wait in the broker's queue, a released branch that no worker has claimed may
# simply be one of them; it counts as lost only after this many leases (300 s by default).
QUEUED_GRACE_LEASES = 10


@dataclass(frozen=True)
class RepublishRule:
    """When a pending branch counts as lost, and how many one pass may publish again."""

    grace: float  # seconds since its (last) dispatch
    budget: int | None  # per pass, across groups; None: no bound
    queued: int = 0  # messages waiting in the queue, any of which may be a pending branch's

    def queued_for(self, last_claim: Callable[[], datetime | None], now: datetime) -> int:
        """How many of a group's unclaimed branches the queue may hold, given when its latest
        claim was (asked only if messages wait).

        Only a group whose branches are still being claimed is draining through the queue; one
        with no claim within the grace gets no such allowance (a queue kept full by other
        runs must not hold a lost branch back for good)."""
        if not self.queued:
            return 0
        latest = last_claim()
        if latest is None or latest < now - timedelta(seconds=self.grace):
            return 0
        return self.queued * conf.get().BRANCH_CHUNK  # a message may be a chunk of branches


def republish_rule(depth: int | None, *, replay: bool = False) -> RepublishRule:
    """The rule for a queue of `depth` waiting messages (None: unknown).

    An empty queue holds none of the pending branches: a message unclaimed after two sweep
    intervals was lost (a dead worker had reserved it, the broker lost it) or sits in a live
    worker's prefetch, where a duplicate just loses its claim; a replay, which may follow a
    failed publish, republishes them at once. A queue with messages waiting may hold every
    one of them, so they count as lost only after QUEUED_GRACE_LEASES, a pass publishes at
    most one request's worth again, and a group no more of them than it has pending branches
    beyond the queue's depth: a republish never feeds the backlog it waits on, however long
    that backlog takes to drain.
    """
    settings = conf.get()
    if depth == 0:
        return RepublishRule(0.0 if replay else 2 * settings.SWEEP_INTERVAL, None)
    grace = QUEUED_GRACE_LEASES * settings.LEASE_SECONDS
    return RepublishRule(grace, settings.PUBLISH_BATCH_SIZE, depth or 0)


def sweep_fanouts_once(limit: int = 200) -> int:
    """Republish the lost or orphaned branches of open groups that are due; returns how many."""
    now = current_time()
    due_groups = take_due_groups(now, limit, _interval(), (UNPINNED, *versions.served()))
    if not due_groups:
        return 0
    rule = republish_rule(served_queue_depth())
    budget = rule.budget
    published = 0
    for gid, run_id, run_status, priority, first, released in due_groups:
        if run_status not in ACTIVE_RUN_STATES:
            stop_checking_group(gid)  # nothing will run again
            continue
        rows = overdue_branches(run_id, first, released, now)
        branches = [BranchState(p, n, s, a, wake_at=w) for p, n, s, a, w in rows]
        due = due_dispatches(
            branches, first, released, now,
            pending_grace=rule.grace, pending_budget=budget,
            queued=rule.queued_for(partial(last_claim, run_id, first, released), now),
        )  # fmt: skip
        again = republished_pending(due, branches)
        if budget is not None:
            budget -= len(again)
        running = {b.position: b.name for b in branches if b.status == StepStatus.RUNNING}
        due = interrupt_at_most_once(run_id, first, running, due)
        if due and _publish(run_id, first, due, again, now, priority):
            published += len(due)
    return published


def _publish(
    run_id: uuid.UUID,
    first: int,
    due: list[BranchDispatch],
    again: list[int],
    now: datetime,
    priority: int,
) -> bool:
    try:
        publish_branches(run_id, first, due, priority)
    except PublishError:
        log.warning("run %s: republishing %d branch(es) failed", run_id, len(due), exc_info=True)
        return False
    record_dispatch(run_id, again, now)
    log.info("run %s: republished %d branch(es) of fan-out @%d", run_id, len(due), first)
    return True


loop = BackgroundLoop("fanfold-fanout-sweep", lambda: conf.get().SWEEP_INTERVAL, sweep_fanouts_once)
