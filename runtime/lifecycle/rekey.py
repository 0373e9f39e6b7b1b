"""`fanfold rekey`: every stored payload re-encrypted with the first payload key, in batches.

Workers may run meanwhile: rows are read in key order, BATCH at a time, and each changed
value is written back only if its row still holds what was read (runtime.store.payload_rows),
each batch in its own short transaction. A payload already on the first key is left alone,
so a second `rekey` writes nothing. Offloaded payloads are written again under their new
name; the files they replace stay until their run is deleted, since another row of the run
may name the same file.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from runtime.payloads.packing import rekey
from runtime.store.payload_rows import PAYLOAD_TABLES, PayloadTable, read_rows, write_back

BATCH = 500


@dataclass
class RekeyReport:
    """How many values each table had rewritten, and how many rows were read."""

    read: int = 0
    rewritten: dict[str, int] = field(default_factory=dict)
    skipped: int = 0  # changed by a worker between the read and the write: left as written


def rekey_all(progress: Callable[[RekeyReport], object] | None = None) -> RekeyReport:
    """Re-encrypt every payload column of every table with the first key."""
    report = RekeyReport()
    for table in PAYLOAD_TABLES:
        after: Any = None
        while True:
            with transaction.atomic():
                rows = read_rows(table, after, BATCH)
                for row in rows:
                    _rekey_row(table, row, report)
            if not rows:
                break
            after = rows[-1][0]
            if progress is not None:
                progress(report)
    return report


def _rekey_row(table: PayloadTable, row: tuple[Any, ...], report: RekeyReport) -> None:
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
        else:
            report.skipped += 1
