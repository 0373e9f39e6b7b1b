"""Checked upgrades: the in-flight runs of a version whose histories this process's code
replays cleanly (runtime.replay_check) move to this version; the others stay, listed with
where and why their replay went wrong. Retiring a version cancels what is left of it.

A run leased by a live executor is left where it is this time ("busy"): its history is still
growing on the old code. Moved runs are sent at once unless they wait (a timer, a callback):
those are sent by the run sweep when due, or by whatever wakes them.
"""

from __future__ import annotations

import uuid
from contextlib import suppress
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from django.db import transaction

from runtime.core.errors import InvalidArguments, RunAlreadyFinished
from runtime.core.versions import is_version
from runtime.dispatch import enqueue_run
from runtime.registry import versions
from runtime.replay_check import ReplayReport, replay_runs
from runtime.services import cancel_run
from runtime.store.runs.versions import (
    active_run_ids,
    move_runs_txn,
    runs_by_ids,
    unwaiting_priorities,
)
from runtime.versions import routing

BATCH = 500


class BadVersion(InvalidArguments):
    """A version name that cannot be one, or an upgrade to the same version (400 over REST,
    an error in the CLI)."""

    code = "invalid_version"


@dataclass
class UpgradeResult:
    """What an upgrade (or its dry run) did: runs checked, moved, and left behind."""

    from_version: str
    to_version: str
    dry_run: bool
    checked: int = 0
    moved: list[uuid.UUID] = field(default_factory=list)
    busy: list[uuid.UUID] = field(default_factory=list)
    refused: list[ReplayReport] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "from": self.from_version,
            "to": self.to_version,
            "dry_run": self.dry_run,
            "checked": self.checked,
            "moved": [str(run_id) for run_id in self.moved],
            "busy": [str(run_id) for run_id in self.busy],
            "refused": [report.as_dict() for report in self.refused],
        }


def checked_version(name: object, what: str = "version") -> str:
    """`name` if it is a version name, else BadVersion."""
    if not isinstance(name, str) or not is_version(name):
        raise BadVersion(f"{what} must be 1-64 letters, digits, '.', '_' or '-': {name!r}")
    return name


def upgrade(
    from_version: str,
    to_version: str | None = None,
    *,
    dry_run: bool = False,
    by: dict[str, Any] | None = None,
) -> UpgradeResult:
    """Replay each in-flight run of `from_version` on this process's code; move the clean ones
    to `to_version` (this process's version) unless `dry_run`."""
    source = checked_version(from_version, "FROM")
    target = checked_version(to_version or versions.current(), "--to")
    if source == target:
        raise BadVersion(f"runs of {source!r} are already on that version")
    result = UpgradeResult(source, target, dry_run)
    after: uuid.UUID | None = None
    while ids := active_run_ids(source, after, BATCH):
        after = ids[-1]
        runs = runs_by_ids(ids)
        clean: list[uuid.UUID] = []
        for report in replay_runs(runs):
            result.checked += 1
            if report.ok:
                clean.append(report.run_id)
            else:
                result.refused.append(report)
        if not dry_run and clean:
            _move(clean, result, by)
        elif dry_run:
            result.moved += clean
    return result


def _move(clean: list[uuid.UUID], result: UpgradeResult, by: dict[str, Any] | None) -> None:
    moved = move_runs_txn(clean, result.from_version, result.to_version, by)
    routing.forget(moved)
    result.moved += moved
    result.busy += [run_id for run_id in clean if run_id not in set(moved)]
    for run_id, priority in unwaiting_priorities(moved):
        transaction.on_commit(partial(enqueue_run, run_id, priority=priority))


def retire(from_version: str, *, by: dict[str, Any] | None = None) -> list[uuid.UUID]:
    """Cancel every in-flight run of `from_version`; the ids cancelled."""
    source = checked_version(from_version, "FROM")
    cancelled: list[uuid.UUID] = []
    after: uuid.UUID | None = None
    while ids := active_run_ids(source, after, BATCH):
        after = ids[-1]
        for run_id in ids:
            with suppress(RunAlreadyFinished):
                cancel_run(run_id, reason=f"version {source} retired", by=by)
            cancelled.append(run_id)
    return cancelled
