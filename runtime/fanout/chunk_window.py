"""A chunk's branches in windows: claimed together, run in turn, reported together.

A chunk (runtime.fanout.chunk) claims its first branch alone. Each commit after that carries
the reports of the window of bodies just run and the claims of the next window: as many of
the chunk's next branches as the bodies so far (their mean) say fit in what is left of
BRANCH_CHUNK_SECONDS and in AT_RISK_SECONDS (all the rest for bodies that take no time), and
at least one while the time before the window's last body was within BRANCH_CHUNK_SECONDS.
So a chunk of no-op branches commits three times, not once a branch: the database's commits,
and the workers' turns at the run's row, were most of a branch's time.

Every report still commits before its branch counts (the group's counters are written with
it), and each body runs once: a window's branches are claimed, their leases held, before the
first of them starts. A worker that dies loses the results it has not committed, whose bodies
then run again: a window keeps at most AT_RISK_SECONDS of bodies unreported (and the one that
went past it), so bodies that take time report as they end, as a lone branch's do. The body
running counts: once it runs past that bound, the reports waiting before it are committed
meanwhile (runtime.fanout.window_flush), not held back for as long as it takes. If a body
fails or is not a plain step, the reports before it are committed first and it is recorded on
its own, as a lone branch would be. Once the bodies have used the chunk's time, or one did
not complete, the window's branches that did not start are handed back (pending at the
previous attempt) and published on their own with the branches never claimed.
"""

from __future__ import annotations

import logging
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from publisher import PublishError
from runtime import conf
from runtime.core.branch_dispatch import BranchDispatch, outcome_summary
from runtime.core.branches import BranchAttempt, BranchReport, ClaimedBranch
from runtime.core.clock import current_time
from runtime.dispatch import publish_branches
from runtime.durable.body import StepBody
from runtime.fanout.branch import (
    BodyTime,
    body_call,
    branch_claim,
    claimed_branch,
    plain_step,
    run_claimed,
)
from runtime.fanout.report import act_on_window, branch_report, record_outcome, record_window
from runtime.fanout.window_flush import window_flusher
from runtime.leases.keepers import branch_leases
from runtime.registry import step_policy
from runtime.store.fanout.fanout_groups import hand_back_claims, record_dispatch

log = logging.getLogger("fanfold.branches")

# The most body time a window keeps unreported: a worker that dies loses the results of the
# bodies it has not committed, and they run again. Bodies that take no time report a window
# at a time; a 5 ms body reports as it ends, as a lone branch's does.
AT_RISK_SECONDS = 0.005

Claimed = tuple[BranchAttempt, ClaimedBranch | None]
LeaseKey = tuple[uuid.UUID, uuid.UUID]
Completed = tuple[BranchAttempt, BranchReport]  # made as the body ended: its finished_at


@dataclass
class ChunkRun:
    """One delivery of a chunk of `count` branches from `first`, window by window."""

    first: BranchAttempt
    count: int
    traceparent: str | None
    budget: float = field(default_factory=lambda: conf.get().BRANCH_CHUNK_SECONDS)
    body_time: BodyTime = field(default_factory=BodyTime)
    bodies: int = 0  # the completed bodies so far
    unreported: float = 0.0  # the body time of the completed branches not committed yet
    claimed_to: int = 1  # the index of the chunk's first branch not claimed yet
    outcomes: Counter[str] = field(default_factory=Counter)
    held: set[LeaseKey] = field(default_factory=set)  # the leases this chunk keeps alive

    def run(self, claimed: ClaimedBranch | None) -> str:
        """Run the chunk from its first branch's claim; says how each branch went."""
        window: list[Claimed] = [(self.first, claimed)]
        if claimed is not None:
            self._hold(self.first)
        try:
            while window:
                window = self._run_window(window)
        except BaseException:
            # A failed commit or an interrupted body: the claimed branches' leases must expire
            # for the takeover to move them on, not be renewed for as long as this process lives.
            for key in self.held:
                branch_leases.release(key)
            raise
        return outcome_summary(self.outcomes)

    def _run_window(self, window: list[Claimed]) -> list[Claimed]:
        """Run a window's bodies in turn; returns the next window, claimed with its reports."""
        completed: list[Completed] = []
        before_last = self.body_time.seconds
        for offset, (branch, claimed) in enumerate(window):
            if claimed is None:
                self.outcomes["skipped"] += 1
                continue
            if offset > 0 and self.body_time.seconds >= self.budget:
                self._stop(completed, window[offset:])
                return []
            before_last = self.body_time.seconds
            if not self._run_body(branch, claimed, completed):
                self._stop([], window[offset + 1 :])
                return []
            if self.unreported >= AT_RISK_SECONDS and offset < len(window) - 1:
                self._record(completed)  # a body ran longer than the window foresaw
        return self._next_window(completed, before_last)

    def _run_body(
        self, branch: BranchAttempt, claimed: ClaimedBranch, completed: list[Completed]
    ) -> bool:
        """Run one claimed branch (its lease held): a completed plain step's outcome joins
        `completed`; anything else is recorded now, after the reports before it. Says whether
        the chunk goes on."""
        fn = plain_step(claimed)
        if fn is None:
            self._record(completed)
            self._let_go(branch)  # run_claimed holds its own
            label = run_claimed(branch, claimed, traceparent=self.traceparent).label
            self.outcomes[label] += 1
            return label == "completed"
        with StepBody(body_call(branch, claimed, fn), self.traceparent) as body:
            with self._reports_meanwhile(completed):
                outcome = body.run(conf.get().MAX_PAYLOAD_BYTES)
            if outcome.ok:
                body.outcome = "completed"  # its report commits with the window's
                self.body_time.seconds += outcome.seconds
                self.unreported += outcome.seconds
                self.bodies += 1
                report = branch_report(
                    branch, claimed, "completed", outcome.size, result=outcome.result
                )
                completed.append((branch, report))
                return True
            self._record(completed)
            self._given_back([branch])
            recorded = record_outcome(branch, claimed, outcome, step_policy(fn))
            body.outcome = recorded.label
        self.outcomes[recorded.label] += 1
        return False

    @contextmanager
    def _reports_meanwhile(self, completed: list[Completed]) -> Iterator[None]:
        """While a body runs: the reports waiting before it are committed by the flusher
        once the window's unreported time reaches AT_RISK_SECONDS (runtime.fanout.
        window_flush), not held for as long as the body takes."""
        if not completed:
            yield
            return
        waiting = window_flusher.hand_over(completed, AT_RISK_SECONDS - self.unreported)
        try:
            yield
        finally:
            try:
                written = window_flusher.take_back(waiting)
            finally:
                if waiting.taken:  # written, or lost with their leases given back
                    self._given_back([branch for branch, _ in waiting.completed])
                    del completed[: len(waiting.completed)]
                    self.unreported = 0.0
            if written is not None:
                self.outcomes.update(act_on_window(waiting.completed, written))

    def _next_window(self, completed: list[Completed], before_last: float) -> list[Claimed]:
        """Commit the window's reports with the next window's claims; returns that window."""
        left = self.count - self.claimed_to
        size = self._window_size(left, before_last)
        following = [self._at(i) for i in range(self.claimed_to, self.claimed_to + size)]
        self.claimed_to += size
        if not completed and not following:
            return self._publish_rest()
        self._given_back([branch for branch, _ in completed])
        written = record_window(completed, [branch_claim(b) for b in following])
        self.unreported = 0.0
        self.outcomes.update(written.labels)
        window = [(b, claimed_branch(r)) for b, r in zip(following, written.claims, strict=True)]
        for branch, claimed in window:
            if claimed is not None:
                self._hold(branch)
        return window or self._publish_rest()

    def _window_size(self, left: int, before_last: float) -> int:
        """How many of the `left` branches not yet claimed the next window takes: none once
        the time before the last body was used up, else what the mean body says fits in
        the time left and in AT_RISK_SECONDS, at least one."""
        if left <= 0 or before_last >= self.budget:
            return 0
        room = min(self.budget - self.body_time.seconds, AT_RISK_SECONDS)
        mean = self.body_time.seconds / self.bodies if self.bodies else 0.0
        if mean <= 0:
            return left
        # The mean, not the longest: one body the scheduler paused must not shrink the rest
        # of the chunk's windows; a body longer than foreseen commits early (_run_window).
        return max(1, min(left, int(room / mean)))

    def _stop(self, completed: list[Completed], unstarted: Sequence[Claimed]) -> None:
        """End the chunk: commit the reports, hand back the window's claims whose bodies did
        not start and publish them with the branches not claimed."""
        self._record(completed)
        held = [branch for branch, claimed in unstarted if claimed is not None]
        if len(held) < len(unstarted):
            self.outcomes["skipped"] += len(unstarted) - len(held)
        hand_back_claims(
            self.first.run_id, [b.step_id for b in held], self.first.attempt, current_time()
        )
        for branch in held:
            self._let_go(branch)
        self._publish_rest([b.position for b in held])

    def _publish_rest(self, handed_back: Sequence[int] = ()) -> list[Claimed]:
        """End the chunk: publish the branches handed back and those never claimed, each on
        its own; no window follows."""
        positions = [*handed_back, *self._unclaimed()]
        self.claimed_to = self.count
        if positions:
            self.outcomes["published"] += publish_alone(self.first, positions)
        return []

    def _record(self, completed: list[Completed]) -> None:
        if completed:
            self._given_back([branch for branch, _ in completed])
            self.outcomes.update(record_window(completed).labels)
            completed.clear()
            self.unreported = 0.0

    def _hold(self, branch: BranchAttempt) -> None:
        branch_leases.hold(branch.lease_key)
        self.held.add(branch.lease_key)

    def _let_go(self, branch: BranchAttempt) -> None:
        branch_leases.release(branch.lease_key)
        self.held.discard(branch.lease_key)

    def _given_back(self, branches: Sequence[BranchAttempt]) -> None:
        """These branches' leases are given back by their report's write, whatever happens."""
        for branch in branches:
            self.held.discard(branch.lease_key)

    def _unclaimed(self) -> list[int]:
        return [self.first.position + i for i in range(self.claimed_to, self.count)]

    def _at(self, index: int) -> BranchAttempt:
        return branch_at(self.first, index)


def branch_at(first: BranchAttempt, index: int) -> BranchAttempt:
    """The attempt of the chunk's branch `index` places after its `first`."""
    return replace(first, position=first.position + index)


def publish_alone(first: BranchAttempt, positions: list[int]) -> int:
    """Publish these branches of `first`'s chunk a message each; returns how many left."""
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
