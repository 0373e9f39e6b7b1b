"""Retention: finished runs older than their workflow's retention are deleted, in batches.

Each batch is one short transaction (runtime.store.lifecycle.purge.delete_unlocked): it locks at
most `BATCH` finished runs with SKIP LOCKED, archives them first when asked, and deletes them
with their steps, events, stream chunks, fan-out groups, messages, values and signal waits.
Running workflows never wait for it: it touches only finished runs' rows, and skips any run
row another transaction holds. A run's offloaded payloads are deleted once its rows are
committed.
"""

from __future__ import annotations

import itertools
import logging
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Q
from django.utils import timezone

from runtime import conf
from runtime.core.run_ids import PERIOD
from runtime.lifecycle.archive import write_archives
from runtime.lifecycle.partition_retirement import create_ahead, partitioned, period_batches
from runtime.payloads.offload import delete_run_payloads, has_payload_storage
from runtime.registry import registry
from runtime.store.lifecycle.purge import delete_unlocked, finished_runs

log = logging.getLogger("fanfold.retention")

BATCH = 500  # runs per transaction
DEFAULT_PACE = 9.0  # rest nine times as long as each batch took: work a tenth (see `purge`)
MAX_REST = 5.0  # seconds: a slow batch (a lock, a full disk) never stalls the purge for long


@dataclass
class PurgeReport:
    """What a purge did (or, dry, would do)."""

    runs: int = 0
    rows: dict[str, int] = field(default_factory=dict)
    archived: int = 0
    files: int = 0
    batches: int = 0

    def add(self, pks: list[Any], counts: dict[str, int], archived: int, files: int) -> None:
        self.runs += len(pks)
        self.archived += archived
        self.files += files
        self.batches += 1
        for label, n in counts.items():
            self.rows[label] = self.rows.get(label, 0) + n


def expired(now: datetime) -> Q | None:
    """Which finished runs are past their retention now (None: no run is ever deleted).

    A workflow's `retention=` overrides FANFOLD_RETENTION for its runs.
    """
    default = conf.get().RETENTION
    workflows = registry.workflows.values()
    overrides = {wf.name: wf.retention for wf in workflows if wf.retention is not None}
    rules: list[Q] = [
        Q(workflow=name, finished_at__lt=now - keep) for name, keep in overrides.items()
    ]
    if default is not None:
        rules.append(Q(finished_at__lt=now - default) & ~Q(workflow__in=list(overrides)))
    if not rules:
        return None
    combined = rules[0]
    for rule in rules[1:]:
        combined |= rule
    return combined


def older_than(age: timedelta, now: datetime | None = None) -> Q:
    """Finished runs that finished more than `age` ago, whatever their workflow."""
    return Q(finished_at__lt=(now or timezone.now()) - age)


def candidates(rule: Q) -> Any:
    """The finished runs a rule selects (a RunQuerySet)."""
    return finished_runs(rule)


def purge(
    rule: Q,
    *,
    archive: bool = False,
    max_batches: int | None = None,
    deadline: float | None = None,
    pace: float = 0.0,
    progress: Callable[[PurgeReport], object] | None = None,
    row_rule: Q | None = None,
) -> PurgeReport:
    """Delete the finished runs `rule` selects, BATCH at a time, until none is left (or
    `max_batches` batches, or the monotonic `deadline`); archive each first with `archive`.

    Where the history is partitioned (PostgreSQL), the weeks whose runs are due first go
    whole (runtime.lifecycle.partition_retirement); then the runs `row_rule` (default: `rule`)
    selects go by row deletes.

    `pace`: after each batch, rest `pace` times as long as the batch took (9.0: the purge
    works a tenth of the time, and retires about 2,800 runs a second on a small host),
    leaving the database and the host's cores to everything else. Once a week's history
    goes by partition, what is left of a purge is CPU (the run rows' deletes), and on a
    two-core host a sequential workflow beside any process busy a fifth of the time or more
    lost 15-20 % of its steps, a tenth of the time 7 % (`bench history`, docs/design/history.md).
    """
    report = PurgeReport()
    offloads = has_payload_storage()
    began = time.monotonic()
    batches = _batches(row_rule if row_rule is not None else rule, archive)
    if partitioned():
        archiver = (lambda: _Archiver()) if archive else (lambda: None)
        weeks = period_batches(rule, timezone.now(), BATCH, archiver)
        batches = itertools.chain(weeks, batches)
    for pks, counts, archived in batches:
        files = sum(delete_run_payloads(pk) for pk in pks) if offloads else 0
        report.add(pks, counts, archived, files)
        if progress is not None:
            progress(report)
        if max_batches is not None and report.batches >= max_batches:
            break
        ended = time.monotonic()
        rest = min((ended - began) * pace, MAX_REST)
        if deadline is not None and ended + rest >= deadline:
            break  # the next batch would start past the deadline
        if rest > 0:
            time.sleep(rest)
        began = time.monotonic()
    return report


class _Archiver:
    """Writes a batch's archives under its locks and remembers how many."""

    def __init__(self) -> None:
        self.written = 0

    def __call__(self, pks: list[uuid.UUID]) -> int:
        self.written = write_archives(pks)
        return self.written


def _batches(rule: Q, archive: bool) -> Iterator[tuple[list[Any], dict[str, int], int]]:
    while True:
        archiver = _Archiver()
        pks, counts = delete_unlocked(candidates(rule), BATCH, archiver if archive else None)
        if not pks:
            return
        yield pks, counts, archiver.written


# The workers' pass: at most this long, then the loop's other work goes on.
PASS_SECONDS = 5.0


def retention_pass() -> PurgeReport | None:
    """One bounded pass of retention, as the workers' background loop runs it."""
    settings = conf.get()
    now = timezone.now()
    create_ahead(now)
    rule = expired(now)
    if rule is None:
        return None
    deadline = time.monotonic() + PASS_SECONDS
    # Partitioned, a due run waits up to a week for its week's partitions to go whole; past
    # that (a week that is not worth retiring yet) it goes by row deletes.
    rows = expired(now - PERIOD) if partitioned() else rule
    report = purge(
        rule, archive=settings.ARCHIVE, deadline=deadline, pace=DEFAULT_PACE, row_rule=rows
    )
    if report.runs:
        log.info("retention: deleted %d finished runs (%d archived)", report.runs, report.archived)
    return report
