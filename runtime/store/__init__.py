"""The checkpoint store: the database sink and every SQL statement of the runtime.

`writer()` is this process's checkpoint writer over a `DatabaseSink`; `write_now` commits one
checkpoint on its own (a cancel, a callback post). Fan-out branch claims and reports have
their own call, runtime.store.fanout.branch_writes.
"""

from __future__ import annotations

from collections.abc import Callable

from runtime import conf
from runtime.checkpoint.batching import BatchLimits, Checkpoint
from runtime.checkpoint.sink import Sink
from runtime.checkpoint.writer import CheckpointWriter
from runtime.process.local import ProcessLocal
from runtime.store.history.sink import DatabaseSink


def new_writer(
    sink: Callable[[], Sink] = DatabaseSink,
    async_window: float | None = None,
    kind: type[CheckpointWriter] = CheckpointWriter,
) -> CheckpointWriter:
    """A checkpoint writer (of class `kind`) over a new `sink()`, with the configured batch
    limits (its async window `async_window` seconds instead, if given)."""
    settings = conf.get()
    limits = BatchLimits(
        max_items=settings.CHECKPOINT_MAX_ITEMS,
        max_bytes=settings.CHECKPOINT_MAX_BYTES,
        async_window=settings.CHECKPOINT_ASYNC_WINDOW if async_window is None else async_window,
    )
    return kind(sink(), limits)


_process_writer: ProcessLocal[CheckpointWriter] = ProcessLocal(new_writer)


def writer() -> CheckpointWriter:
    """This process's checkpoint writer (a fresh one in each forked Celery child)."""
    return _process_writer.get()


def install_writer(
    local: ProcessLocal[CheckpointWriter],
) -> ProcessLocal[CheckpointWriter]:
    """Make `local` the source of `writer()`; returns the one it replaces (runtime.testing)."""
    global _process_writer
    previous, _process_writer = _process_writer, local
    return previous


def write_now(payload: object, *, session: str, size: int) -> None:
    """Commit one checkpoint in a session of its own; raises CheckpointFailed if it was not."""
    w = writer()
    try:
        w.write(Checkpoint(session=session, payload=payload, size=size, sync=True))
    finally:
        w.reset_session(session)
