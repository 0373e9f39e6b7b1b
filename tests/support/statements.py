"""Counting what reaches PostgreSQL: every statement any psycopg cursor sends (Django's, and
the raw prepared ones Django's query capture does not see), with whether it went prepared."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg


def sql_text(query: Any) -> str:
    """A statement as sent: a raw cursor's go as bytes (runtime.store.raw_statements)."""
    return query.decode() if isinstance(query, bytes) else str(query)


@contextmanager
def statements_sent(*, every_thread: bool = False) -> Iterator[list[tuple[str, bool]]]:
    """The statements this thread sends inside the block (`every_thread`: any thread's, the
    checkpoint writer's too), in order, as (SQL, prepared)."""
    sent: list[tuple[str, bool]] = []
    execute = psycopg.Cursor.execute
    caller = threading.get_ident()

    def counted(cursor: psycopg.Cursor[Any], query: Any, *args: Any, **kwargs: Any) -> Any:
        if every_thread or threading.get_ident() == caller:
            text = sql_text(query)
            sent.append((text, bool(kwargs.get("prepare"))))
        return execute(cursor, query, *args, **kwargs)

    psycopg.Cursor.execute = counted  # type: ignore[method-assign, assignment]
    try:
        yield sent
    finally:
        psycopg.Cursor.execute = execute  # type: ignore[method-assign]
