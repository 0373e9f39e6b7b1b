"""Replay's verdict on a fan-out: its recorded branches settled into the values `ctx.all`
returns (or the failure it raises). It depends only on (succeeded, failed), as the store's
verdict does, so both reach the same one (runtime.core.fanin holds the rules)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from runtime.core.fanin import CANCELLED_ERROR, FanInRule


class Branch(Protocol):
    """What fan-in reads of one branch's step row: a `BranchState`, or replay's recorded step
    itself (a 100,000-branch fan-out's last pass need not copy every record)."""

    @property
    def position(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def attempt(self) -> int: ...
    @property
    def result(self) -> Any: ...
    @property
    def error(self) -> dict[str, Any] | None: ...
    @property
    def wake_at(self) -> datetime | None: ...


@dataclass(frozen=True, slots=True)
class BranchState:
    """What the history says about one branch (a step row of the group)."""

    position: int
    name: str
    status: str
    attempt: int = 0
    result: Any = None
    error: dict[str, Any] | None = None
    wake_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Failure:
    """A branch that failed or was cancelled, in place of its result."""

    position: int
    name: str
    error: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class Settled:
    verdict: str
    values: list[Any]  # results in branch order; Failure in place of failed/cancelled branches
    first_failure: Failure | None


def settle(
    rule: FanInRule, branches: Sequence[Branch], first_failure: int | None
) -> Settled | None:
    """The fan-out's outcome from its recorded branches, or None while it is undecided.

    `first_failure` is the position of the first failed branch in the event log (kept on the
    group row); without it the lowest failed position stands in.
    """
    succeeded = sum(1 for b in branches if b.status == "completed")
    failed = sum(1 for b in branches if b.status == "failed")
    verdict = rule.verdict(succeeded, failed)
    if verdict is None:
        return None
    values: list[Any] = []
    failures: list[Failure] = []
    for b in branches:
        if b.status == "completed":
            values.append(b.result)
            continue
        error = b.error if b.status == "failed" else (b.error or CANCELLED_ERROR)
        failure = Failure(b.position, b.name, error)
        values.append(failure)
        if b.status == "failed":
            failures.append(failure)
    first = next((f for f in failures if f.position == first_failure), None)
    return Settled(verdict, values, first or (failures[0] if failures else None))
