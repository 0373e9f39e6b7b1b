"""Fast takeover: the leases of a process that died end at once, not when they expire.

Every worker process runs this pass every `FANFOLD_TAKEOVER_INTERVAL` seconds (1 by default).
A lease whose owner no longer holds its liveness lock (runtime.leases.liveness) is a
suspect; seen so in two passes in a row it is ended: a run's lease ends and the run is
enqueued again, a branch's lease ends and its next attempt is published (an
at-most-once branch's interrupted attempt is failed instead, as after any expired lease). The
second look spares a live process that just reconnected after a database restart, before it
took its lock again. Many processes may run the pass at once: ending a lease is conditional,
so only one of them enqueues. A process takes over only the runs and branches of the
versions it serves: a dead v1 worker's runs go to another v1 worker, never to a v2 one.
"""

from __future__ import annotations

import logging
import uuid

from runtime import conf
from runtime.core.clock import current_time
from runtime.core.versions import UNPINNED
from runtime.dispatch import enqueue_run
from runtime.fanout.interrupted import publish_next_attempts
from runtime.process.background import BackgroundLoop
from runtime.registry import versions
from runtime.store.lifecycle.liveness import (
    expire_branch_leases,
    expire_run_leases,
    orphaned_branches,
    orphaned_runs,
)
from runtime.store.runs.run_statements import run_priorities

log = logging.getLogger("fanfold.takeover")

Orphan = tuple[uuid.UUID, int]  # a leased row's id and its dead owner's key
BranchOrphan = tuple[uuid.UUID, int, uuid.UUID]  # the same, and the branch's run id


class Takeover:
    """The takeover pass, remembering the suspects of the previous pass."""

    def __init__(self) -> None:
        self._suspect_runs: set[Orphan] = set()
        self._suspect_branches: set[BranchOrphan] = set()

    def pass_once(self) -> tuple[int, int]:
        """End the leases of twice-seen dead owners; returns (runs, branches) taken over."""
        runs = self._take_runs()
        branches = self._take_branches()
        return runs, branches

    def _take_runs(self) -> int:
        orphans = set(orphaned_runs(versions=(UNPINNED, *versions.served())))
        confirmed, self._suspect_runs = orphans & self._suspect_runs, orphans
        ended = expire_run_leases(sorted(confirmed), current_time())
        for run_id, priority in run_priorities(ended):
            enqueue_run(run_id, priority=priority)
        if ended:
            log.info("took over %d run(s) of dead processes", len(ended))
        self._suspect_runs -= confirmed
        return len(ended)

    def _take_branches(self) -> int:
        orphans = set(orphaned_branches(versions=(UNPINNED, *versions.served())))
        confirmed, self._suspect_branches = orphans & self._suspect_branches, orphans
        ended = expire_branch_leases(sorted(confirmed), current_time())
        self._suspect_branches -= confirmed
        if ended:
            published = publish_next_attempts(ended)
            log.info(
                "took over %d branch(es) of dead processes (%d published)", len(ended), published
            )
        return len(ended)


loop = BackgroundLoop(
    "fanfold-takeover", lambda: conf.get().TAKEOVER_INTERVAL, Takeover().pass_once
)
