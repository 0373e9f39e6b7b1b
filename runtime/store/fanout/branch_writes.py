"""Fan-out branch claims and reports: a call that writes them and returns their receipts.

They ride this process's checkpoint writer, so they are group-committed with the other
threads' checkpoints, claims and reports (one transaction per batch, see
runtime.store.history.sink), but each is a write of its own: not part of a run's session, a failure
fails that call alone. A receipt is what the committed transaction decided
(runtime.store.fanout.branch_claims, runtime.store.fanout.branch_reports); none is handed out before
the commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from runtime.checkpoint.batching import NO_SESSION, Checkpoint
from runtime.core.branches import BranchClaim, BranchReceipt, BranchReport, ClaimReceipt
from runtime.store import writer

_Receipt = TypeVar("_Receipt", BranchReceipt, ClaimReceipt)

_CLAIM_BYTES = 64
_REPORT_BYTES = 256  # beside the result's own bytes


@dataclass(frozen=True)
class ReportReceipts:
    """What a call of `record_reports` got back: each report's receipt, then each claim's."""

    reports: list[BranchReceipt]
    claims: list[ClaimReceipt]


def claim_branches(claims: Sequence[BranchClaim]) -> list[ClaimReceipt]:
    """Take these branch attempts; returns each claim's receipt, in order, once committed.

    Raises CheckpointFailed if the batch holding them was not committed.
    """
    written = _write([Checkpoint(NO_SESSION, c, _CLAIM_BYTES, sync=True) for c in claims])
    return [_receipt(r, ClaimReceipt) for r in written]


def record_reports(
    reports: Sequence[BranchReport], then: Sequence[BranchClaim] = ()
) -> ReportReceipts:
    """Record these branch reports, and take the claims `then` in the same batch (a chunk's
    next branch); returns their receipts once committed. Raises CheckpointFailed if the batch
    holding them was not committed."""
    checkpoints = [
        Checkpoint(NO_SESSION, r, _REPORT_BYTES + (r.result_bytes or 0), sync=True) for r in reports
    ]
    checkpoints += [Checkpoint(NO_SESSION, c, _CLAIM_BYTES, sync=True) for c in then]
    written = _write(checkpoints)
    return ReportReceipts(
        [_receipt(r, BranchReceipt) for r in written[: len(reports)]],
        [_receipt(r, ClaimReceipt) for r in written[len(reports) :]],
    )


def _write(checkpoints: list[Checkpoint]) -> list[object]:
    return writer().write_all(checkpoints) if checkpoints else []


def _receipt(value: object, kind: type[_Receipt]) -> _Receipt:
    if not isinstance(value, kind):
        raise TypeError(f"the sink returned {value!r} for a branch write, not a {kind.__name__}")
    return value
