"""The checkpoint store's statements on psycopg's raw cursor: each text converted once.

psycopg's default cursor turns a query's `%s` placeholders into PostgreSQL's `$1`, `$2`, ...
on every execute, and keeps the result only for a statement of at most 50 parameters and
4 KB. A run's end (its step, its events, the run's patch) has more, so its text was parsed
again on every commit: about a quarter of a Django task worker's checkpoint thread. These
statements are a few fixed texts (built once per shape), so a `StatementCursor` converts each
once (`native`) and sends it as a `psycopg.RawCursor` does, `$n` placeholders as they are.
"""

from __future__ import annotations

import functools
import re
import threading
from typing import Any, Self

import psycopg

_PLACEHOLDER = re.compile(r"%(.)", re.DOTALL)

_kept = threading.local()


@functools.lru_cache(maxsize=1024)
def native(sql: str) -> bytes:
    """`sql`, whose placeholders are `%s` (and `%%` a percent sign), with PostgreSQL's own
    numbered placeholders, as the bytes a raw cursor sends."""
    count = 0

    def numbered(match: re.Match[str]) -> str:
        nonlocal count
        kind = match.group(1)
        if kind == "%":
            return "%"
        if kind != "s":
            raise ValueError(f"only %s placeholders are converted, not %{kind}: {sql[:80]!r}")
        count += 1
        return f"${count}"

    return _PLACEHOLDER.sub(numbered, sql).encode()


class StatementCursor(psycopg.RawCursor[Any]):
    """A raw cursor that takes the store's `%s` texts: each is converted once (`native`)."""

    def execute(
        self,
        query: Any,
        params: Any = None,
        *,
        prepare: bool | None = None,
        binary: bool | None = None,
    ) -> Self:
        if isinstance(query, str):
            query = native(query)
        return super().execute(query, params, prepare=prepare, binary=binary)


def kept_cursor(raw: psycopg.Connection) -> StatementCursor:
    """This thread's statement cursor on `raw`, kept for its next statements: a new cursor
    starts with no parameter dumpers and looks each parameter type's up again."""
    cursor: StatementCursor | None = getattr(_kept, "cursor", None)
    if cursor is None or cursor.connection is not raw or cursor.closed:
        cursor = _kept.cursor = StatementCursor(raw)
    return cursor
