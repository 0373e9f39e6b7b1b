"""Counting what reaches PostgreSQL: every statement any psycopg cursor sends (Django's, and
the raw prepared ones Django's query capture does not see), with whether it went prepared."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg


@contextmanager
def statements_sent() -> Iterator[list[tuple[str, bool]]]:
    """The statements sent inside the block, in order, as (SQL, prepared)."""
    sent: list[tuple[str, bool]] = []
    execute = psycopg.Cursor.execute

    def counted(cursor: psycopg.Cursor[Any], query: Any, *args: Any, **kwargs: Any) -> Any:
        text = query.decode() if isinstance(query, bytes) else str(query)  # a raw cursor's
        sent.append((text, bool(kwargs.get("prepare"))))
        return execute(cursor, query, *args, **kwargs)

    psycopg.Cursor.execute = counted  # type: ignore[method-assign, assignment]
    try:
        yield sent
    finally:
        psycopg.Cursor.execute = execute  # type: ignore[method-assign]
