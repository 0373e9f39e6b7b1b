"""`fanfold rekey`: every stored payload re-encrypted with the first payload key, in batches.

Workers may run meanwhile: rows are read in key order, BATCH at a time, and each changed
value is written back only if its row still holds what was read
(runtime.store.lifecycle.payload_rows), each batch in its own short transaction. A payload already
on the first key is left alone, so a second `rekey` writes nothing. Offloaded payloads are written
again under their new name. A file one is replaced from is deleted once the batch has committed and
no row of its run names it any more: a step's result and its event name the same file, so the file
goes with the last of them to be rewritten. Names are computed from the first key, so no process
that has the current keys writes a replaced file's name again.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from runtime.payloads.offload import delete_offloaded
from runtime.payloads.packing import rekey
from runtime.store.lifecycle.payload_rows import (
    PAYLOAD_TABLES,
    PayloadTable,
    names_file,
    write_back,
)
from runtime.store.lifecycle.rekey_batches import rewrite_batch

BATCH = 500


@dataclass
class RekeyReport:
    """How many values each table had rewritten, and how many rows were read."""

    read: int = 0
    rewritten: dict[str, int] = field(default_factory=dict)
    skipped: int = 0  # changed by a worker between the read and the write: left as written
    files_deleted: int = 0  # offloaded files replaced, that no row of their run names any more
    replaced: set[tuple[uuid.UUID, str]] = field(default_factory=set)  # of the current batch


def rekey_all(progress: Callable[[RekeyReport], object] | None = None) -> RekeyReport:
    """Re-encrypt every payload column of every table with the first key."""
    report = RekeyReport()
    for table in PAYLOAD_TABLES:
        after: Any = None
        while True:
            rows = rewrite_batch(table, after, BATCH, partial(_rekey_row, table, report=report))
            _delete_replaced(report)  # once the batch is committed
            if not rows:
                break
            after = rows[-1][0]
            if progress is not None:
                progress(report)
    return report


def _rekey_row(table: PayloadTable, row: tuple[Any, ...], *, report: RekeyReport) -> None:
    key, run = row[0], row[1]
    run_id = run if isinstance(run, uuid.UUID) else uuid.UUID(str(run))
    report.read += 1
    for column, text in zip(table.columns, row[2:], strict=True):
        if text is None:
            continue
        stored = json.loads(text) if isinstance(text, str) else text
        done = rekey(stored, run_id)
        if done.stored is stored:
            continue
        read_as = text if isinstance(text, str) else json.dumps(text)
        if write_back(table, key, column, read_as, done.stored):
            report.rewritten[table.name] = report.rewritten.get(table.name, 0) + 1
            if done.replaced is not None:
                report.replaced.add((run_id, done.replaced))
        else:
            report.skipped += 1


def _delete_replaced(report: RekeyReport) -> None:
    """Delete the files the last batch replaced that no row of their run names any more."""
    for run_id, name in sorted(report.replaced):
        if not names_file(run_id, name):
            delete_offloaded(name)
            report.files_deleted += 1
    report.replaced.clear()
