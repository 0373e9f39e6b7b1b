"""`SortedBatch`: a checkpoint batch's writes sorted by kind, history in stored form.

Each write adds itself (`sort_into`, runtime.core.writes): history writes with their session,
in the stored form of their payloads (runtime.store.history.payload_forms), and the fan-out
branches' claims and reports, each kind in batch order. The sink writes each kind by its own path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

from runtime.checkpoint.batching import Checkpoint
from runtime.core.branches import BranchClaim, BranchReport
from runtime.core.writes import HistoryWrite, Write
from runtime.store.history.payload_forms import StoredForms


@dataclass
class BranchWrites:
    """A batch's fan-out branch reports and claims, each kind in batch order."""

    reports: list[BranchReport] = field(default_factory=list)
    claims: list[BranchClaim] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.reports or self.claims)


class SortedBatch:
    """The history writes (session, write) and the branch writes of one batch."""

    def __init__(self) -> None:
        self.history_writes: list[tuple[str, HistoryWrite]] = []
        self.branch_writes = BranchWrites()
        self._forms: StoredForms | None = None

    @classmethod
    def of(cls, checkpoints: Sequence[Checkpoint]) -> SortedBatch:
        """The batch's writes sorted; a checkpoint without a payload (a barrier) adds none."""
        batch = cls()
        for cp in checkpoints:
            if cp.payload is not None:
                cast(Write, cp.payload).sort_into(batch, cp.session, cp.size)
        return batch

    def history(self, write: HistoryWrite, session: str, size: int) -> None:
        if self._forms is None:
            self._forms = StoredForms()  # the settings of the moment, read once per batch
        self.history_writes.append((session, self._forms.history_write(write, size)))

    def claim(self, claim: BranchClaim) -> None:
        self.branch_writes.claims.append(claim)

    def report(self, report: BranchReport) -> None:
        self.branch_writes.reports.append(report)
