"""A fan-out branch's writes, pure: the attempt, its claim and report, and their receipts.

The fan-out write path in one walk: a branch message names a `BranchAttempt`; its worker
writes a `BranchClaim` (runtime.store.fanout.branch_writes), and the claim's `ClaimReceipt`
says whether it won and hands over the step (`ClaimedBranch`); the body's outcome goes as a
`BranchReport`, whose `BranchReceipt` says what the committed batch decided (runtime.fanout.
report acts on it). Claims and reports ride the checkpoint writer with other writes: each
carries a `key` of its own, under which the store files its receipt (`receipt_key`).
"""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any

from runtime.core.identity import group_id, step_id

if TYPE_CHECKING:
    from runtime.core.writes import WriteSorter

# A write's key: unique in the process (next() of a count is atomic under the GIL), so two
# writes of one batch never share one, even two claims of the same step attempt.
_next_key = itertools.count(1).__next__


@dataclass(frozen=True)
class BranchAttempt:
    """One attempt of one fan-out branch: what every branch message names."""

    run_id: uuid.UUID
    position: int
    attempt: int
    group_position: int  # the fan-out's first position
    priority: int = 0  # the run's: what this attempt publishes or enqueues goes out with it

    # Derived once per attempt: a branch asks for them several times (uuid5 hashes each time).
    @cached_property
    def step_id(self) -> uuid.UUID:
        return step_id(self.run_id, self.position)

    @property
    def lease_key(self) -> tuple[uuid.UUID, uuid.UUID]:
        """What the branch's lease is held by (runtime.leases.keepers.branch_leases)."""
        return self.run_id, self.step_id

    @cached_property
    def group_id(self) -> uuid.UUID:
        return group_id(self.run_id, self.group_position)


@dataclass(frozen=True)
class ClaimedBranch:
    """What a won claim hands the branch: the step's name, kind, input and start time."""

    name: str
    kind: str
    input: dict[str, Any]
    started_at: datetime


@dataclass(frozen=True)
class Recorded:
    """How a branch's attempt went ("completed", "stale", "retrying", "failed", ...)."""

    label: str


@dataclass(frozen=True, slots=True)
class BranchReport:
    """The outcome of one attempt of a fan-out branch, written by the worker that ran it.

    The store records it only if the step is still running this attempt (otherwise the report
    is stale: a duplicate delivery, a cancelled run, an attempt taken over) and counts it on
    the group row; its receipt (`BranchReceipt`) says what the committed batch decided.
    `outcome` is "completed", "failed" (for good) or "retrying" (`wake_at`: the next attempt).
    """

    run_id: uuid.UUID
    step_id: uuid.UUID
    position: int
    group_id: uuid.UUID
    attempt: int
    outcome: str
    started_at: datetime
    finished_at: datetime
    result: Any = None
    error: dict[str, Any] | None = None
    reason: str = ""
    wake_at: datetime | None = None
    # Set by the sweep when it declares an attempt interrupted: record the report only if the
    # step's lease had still expired by then (its worker may have renewed it meanwhile).
    lease_expired_by: datetime | None = None
    # The JSON bytes of `result` as measured (None: not measured), which bounds what the store
    # must measure again before it decides whether the value goes to the payload storage.
    result_bytes: int | None = None
    key: int = field(default_factory=_next_key, compare=False, repr=False)

    def sort_into(self, batch: WriteSorter, session: str, size: int) -> None:
        batch.report(self)


@dataclass(frozen=True, slots=True)
class BranchClaim:
    """A worker's claim on one attempt of a fan-out branch, group-committed with other claims.

    A fresh claim takes the step if it is pending at `attempt - 1`, or running it with an expired
    lease (its worker died); a `continuing` claim (a child branch's next poll) renews the lease
    of the step running `attempt`. Either way the run must be active. At most one claim of a
    step attempt wins; its receipt is handed out after commit, so the win is durable before the
    branch body runs.
    """

    run_id: uuid.UUID
    step_id: uuid.UUID
    attempt: int
    continuing: bool = False
    owner: int | None = None  # the claiming process's liveness key
    key: int = field(default_factory=_next_key, compare=False, repr=False)

    def sort_into(self, batch: WriteSorter, session: str, size: int) -> None:
        batch.claim(self)


@dataclass(frozen=True, slots=True)
class BranchReceipt:
    """What the store did with a branch report, once its transaction committed.

    `recorded` is False for a stale report (a duplicate, a cancelled or taken-over attempt):
    the caller then does nothing. `release` lists branch positions to publish, `wake` says the
    report settled the fan-out and the workflow must be enqueued (exactly one report does).
    """

    recorded: bool = False
    release: tuple[int, ...] = ()
    wake: bool = False


@dataclass(frozen=True, slots=True)
class ClaimReceipt:
    """What the store did with a branch claim, once its transaction committed.

    `won` is True for exactly one claim of a step attempt: that caller runs the body. The other
    fields describe the claimed step (its registered name, kind, recorded input, start time).
    """

    won: bool = False
    name: str = ""
    kind: str = ""
    input: dict[str, Any] = field(default_factory=dict)
    started_at: datetime | None = None


def receipt_key(write: object) -> int | None:
    """The key a write's receipt is filed under: a branch claim's or report's; None for the
    other writes (they get no receipt)."""
    return write.key if isinstance(write, BranchClaim | BranchReport) else None
