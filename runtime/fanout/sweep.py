"""The fan-out recovery sweep: no branch is stranded by a lost message or a dead worker.

Redis keeps a message that a killed worker had taken unacknowledged for the broker's whole
visibility timeout, so the runtime does not wait for it: every open group is looked at about
every lease period. A running branch whose lease expired is taken over by its next attempt;
a released pending branch whose message is long overdue is published again. Duplicates are
harmless: every delivery must win the step's claim first. Groups are looked at, and their
branches republished, highest run priority first, with the run's priority on every message.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from publisher import PublishError
from runtime import conf
from runtime.core.fanin import BranchState, due_dispatches
from runtime.dispatch import publish_branches, queue_depth
from runtime.fanout.takeover import interrupt_at_most_once
from runtime.models import ACTIVE_RUN_STATES, FanoutGroup, Step, StepStatus
from runtime.recovery.loop import BackgroundLoop

log = logging.getLogger("fanfold.fanout_sweep")


def _interval() -> float:
    settings = conf.get()
    return max(settings.SWEEP_INTERVAL, settings.LEASE_SECONDS / 2)


def pending_grace() -> float:
    """How long a released branch's message may go unclaimed before it counts as lost.

    While messages wait in the broker's queue, a branch may just be waiting its turn: two
    leases, so that a republish never feeds a backlog. With the queue empty nothing is waiting
    there: a message unclaimed after two sweep intervals was lost (a dead worker had reserved
    it, or the broker lost it) or sits in a live worker's prefetch, where a duplicate loses
    its claim.
    """
    settings = conf.get()
    if queue_depth() == 0:
        return 2 * settings.SWEEP_INTERVAL
    return 2 * settings.LEASE_SECONDS


def sweep_fanouts_once(limit: int = 200) -> int:
    """Republish the lost or orphaned branches of open groups that are due; returns how many."""
    now = timezone.now()
    with transaction.atomic():
        due_groups = list(
            FanoutGroup.objects.open()
            .filter(check_at__lt=now)
            .select_for_update(skip_locked=True, of=("self",))
            .order_by("-run__priority", "check_at")
            .values_list(
                "id", "run_id", "run__status", "run__priority", "first_position", "released"
            )[:limit]
        )
        ids = [g[0] for g in due_groups]
        FanoutGroup.objects.filter(id__in=ids).update(check_at=now + timedelta(seconds=_interval()))
    published = 0
    grace = pending_grace() if due_groups else 0.0
    for gid, run_id, run_status, priority, first, released in due_groups:
        if run_status not in ACTIVE_RUN_STATES:
            FanoutGroup.objects.filter(id=gid).update(check_at=None)  # nothing will run again
            continue
        stale = Q(status=StepStatus.RUNNING, wake_at__lt=now)
        overdue = Q(status=StepStatus.PENDING) & (Q(wake_at__isnull=True) | Q(wake_at__lt=now))
        rows = Step.objects.filter(
            Q(run_id=run_id, position__gte=first, position__lt=first + released) & (stale | overdue)
        ).values_list("position", "name", "status", "attempt", "wake_at")
        branches = [BranchState(p, n, s, a, wake_at=w) for p, n, s, a, w in rows]
        due = due_dispatches(branches, first, released, now, pending_grace=grace)
        running = {b.position: b.name for b in branches if b.status == StepStatus.RUNNING}
        due = interrupt_at_most_once(run_id, first, running, due)
        if not due:
            continue
        try:
            publish_branches(run_id, first, due, priority)
        except PublishError:
            log.warning(
                "run %s: republishing %d branch(es) failed", run_id, len(due), exc_info=True
            )
            continue
        published += len(due)
        log.info("run %s: republished %d branch(es) of fan-out @%d", run_id, len(due), first)
    return published


loop = BackgroundLoop("fanfold-fanout-sweep", lambda: conf.get().SWEEP_INTERVAL, sweep_fanouts_once)
