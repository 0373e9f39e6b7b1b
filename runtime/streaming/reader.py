"""Following a run's stream: chunks in seq order, as they are written, until the run ends.

The reader looks at the database, hands out what it found, and waits for the run's signal
(runtime.streaming.wakeups) before looking again. A signal that arrives while it looks makes
the wait return at once, so nothing committed after a look goes unseen.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from runtime.core.identity import check_name
from runtime.store.messaging.stream_reads import chunks_after as _chunk_rows
from runtime.store.messaging.stream_reads import run_finished
from runtime.streaming.shared import SharedLooks
from runtime.streaming.wakeups import fallback_seconds, signals

PAGE = 500


@dataclass(frozen=True, slots=True)
class Chunk:
    """One value of a stream and its seq (dense per stream, from 1)."""

    seq: int
    value: Any


def chunks_after(run_id: uuid.UUID, stream: str, after: int, limit: int = PAGE) -> list[Chunk]:
    """The stream's chunks after seq `after`, in order, at most `limit`."""
    rows = _chunk_rows(run_id, stream, after, limit)
    return [Chunk(seq, value) for seq, value in rows]


_shared: SharedLooks[list[Chunk]] = SharedLooks()


class StreamFollower:
    """Iterates a stream's chunks after `after` until the run finishes or `until` passes.

    `until` is a `time.monotonic()` deadline (None: no deadline). After iterating, `ended`
    says whether the stream ended (the run finished and every chunk was handed out).
    """

    def __init__(
        self, run_id: uuid.UUID, stream: str, after: int = 0, until: float | None = None
    ) -> None:
        self.run_id = run_id
        self.stream = stream
        self.last_seq = after
        self.until = until
        self.ended = False
        self._finished: bool | None = None  # None until the first look

    def __iter__(self) -> Iterator[Chunk]:
        for page in self.pages():
            yield from page

    def pages(self) -> Iterator[list[Chunk]]:
        """The chunks in pages, as each look at the database found them."""
        hub = signals()
        poll = fallback_seconds()
        hub.watch(self.run_id)
        try:
            while True:
                seen = hub.seen(self.run_id)
                page = self._next_page(seen)
                if page:
                    yield page
                if self.ended:
                    return
                if len(page) == PAGE:
                    continue
                left = poll if self.until is None else self.until - time.monotonic()
                if left <= 0:
                    return
                hub.wait(self.run_id, seen, min(left, poll))
        finally:
            hub.unwatch(self.run_id)

    def _next_page(self, seen: tuple[int, int]) -> list[Chunk]:
        # Chunks commit before their run finishes, so a look that begins after the run was
        # seen finished finds every chunk. The status is read at the first look and after an
        # empty one: while chunks come, a look is one query, shared with this process's other
        # readers of the stream (runtime.streaming.shared). A look that may end the stream is
        # never shared: it must begin after this reader saw the run finished.
        if self._finished is None:
            self._finished = run_finished(self.run_id)
        page = self._look(seen)
        if not page and not self._finished and run_finished(self.run_id):
            self._finished = True
            page = self._look(seen)
        if page:
            self.last_seq = page[-1].seq
        self.ended = bool(self._finished) and len(page) < PAGE
        return page

    def _look(self, seen: tuple[int, int]) -> list[Chunk]:
        after = self.last_seq
        if self._finished:
            return chunks_after(self.run_id, self.stream, after)
        question = (after, seen)
        return _shared.look(
            self.run_id,
            self.stream,
            question,
            lambda: chunks_after(self.run_id, self.stream, after),
        )


def read_stream(
    run_id: uuid.UUID, stream: str, after: int = 0, timeout: float | None = None
) -> Iterator[Any]:
    """The stream's values after seq `after`, ending when the run finishes.

    Raises TimeoutError if the run is still going after `timeout` seconds.
    """
    check_name(stream, "stream")
    if isinstance(after, bool) or not isinstance(after, int) or after < 0:
        raise ValueError("after must be a chunk seq (an integer >= 0)")
    until = None if timeout is None else time.monotonic() + timeout
    follower = StreamFollower(run_id, stream, after, until)
    for chunk in follower:
        yield chunk.value
    if not follower.ended:
        raise TimeoutError(f"run {run_id} is still going after {timeout} s")
