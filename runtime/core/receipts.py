"""What the store did with a branch claim or a branch report: built once the store knows,
handed to the writer after its transaction committed (runtime.store.fanout.branch_writes)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


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
