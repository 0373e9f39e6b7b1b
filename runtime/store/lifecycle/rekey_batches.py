"""One batch of `fanfold rekey`: rows read and rewritten in one short transaction."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import transaction

from runtime.store.lifecycle.payload_rows import PayloadTable, read_rows


def rewrite_batch(
    table: PayloadTable, after: Any, limit: int, rewrite: Callable[[tuple[Any, ...]], object]
) -> list[tuple[Any, ...]]:
    """Read up to `limit` rows of `table` after key `after` and call `rewrite(row)` on each,
    all in one transaction; the rows read."""
    with transaction.atomic():
        rows = list(read_rows(table, after, limit))
        for row in rows:
            rewrite(row)
    return rows
