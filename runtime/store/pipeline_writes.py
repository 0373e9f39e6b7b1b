"""A psycopg pipeline whose statements leave in one write instead of one write each.

psycopg sends each statement of a pipeline as soon as it is executed: a wait for the socket
and a `send` per statement, and the server wakes for each of them. A checkpoint transaction
is three to five statements (BEGIN, the writes, COMMIT) and one goes out per step or branch,
so that was four more `send`s and eight more `poll`s per transaction than needed: about 40 µs
of system time in the client here, besides the server's wake-ups. Inside `sent_together` a
cursor's `execute` only queues its commands; on leaving, they are all handed to libpq, which
holds them in its output buffer, and the pipeline's exit flushes them with its Sync (libpq
sends what its buffer holds as it fills). The results are read and checked exactly as
psycopg reads them: only when the bytes leave changes.

This reaches into psycopg's pipeline (`_communicate_gen`, `command_queue`); on a psycopg
without them it does nothing and the pipeline sends as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg


def _supported() -> bool:
    pipeline = psycopg.Pipeline
    return callable(getattr(pipeline, "_communicate_gen", None)) and not hasattr(
        pipeline, "__slots__"
    )


SUPPORTED = _supported()


def _hold() -> Iterator[None]:
    """Stands in for the pipeline's communication while statements are queued."""
    return iter(())


@contextmanager
def sent_together(pipeline: Any) -> Iterator[None]:
    """Queue what cursors execute in `pipeline` in this block; hand it all to libpq at the end
    (on success only: a failed block leaves the queue to the pipeline's own exit)."""
    if not SUPPORTED or not hasattr(pipeline, "command_queue"):
        yield
        return
    pipeline._communicate_gen = _hold
    try:
        yield
    finally:
        del pipeline._communicate_gen
    commands = pipeline.command_queue
    while commands:
        commands.popleft()()
