"""The checkpoint store's statements on psycopg's raw cursor: each text converted once.

psycopg's default cursor turns a query's `%s` placeholders into PostgreSQL's `$1`, `$2`, ...
on every execute, and keeps the result only for a statement of at most 50 parameters and
4 KB. A run's end (its step, its events, the run's patch) has more, so its text was parsed
again on every commit: about a quarter of a Django task worker's checkpoint thread. These
statements are a few fixed texts (built once per shape), so each is converted here once and
sent on a `psycopg.RawCursor`, which takes `$n` placeholders as they are.
"""

from __future__ import annotations

import functools
import re
import threading
from typing import Any

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


def kept_cursor(raw: psycopg.Connection) -> psycopg.RawCursor[Any]:
    """This thread's raw cursor on `raw`, kept for its next statements: a new cursor starts
    with no parameter dumpers and looks each parameter type's up again."""
    cursor: psycopg.RawCursor[Any] | None = getattr(_kept, "cursor", None)
    if cursor is None or cursor.connection is not raw or cursor.closed:
        cursor = _kept.cursor = psycopg.RawCursor(raw)
    return cursor
