"""MemorySink: the in-memory fake users test their workflows against."""

from __future__ import annotations

import pytest

from runtime.checkpoint import Checkpoint, MemorySink


def test_memory_sink_records_batches_in_order() -> None:
    sink = MemorySink()

    sink.write_batch([Checkpoint("a", 1), Checkpoint("b", 2)])
    sink.write_batch([Checkpoint("a", 3)])

    assert [[c.payload for c in b] for b in sink.batches] == [[1, 2], [3]]
    assert [c.payload for c in sink.checkpoints] == [1, 2, 3]


def test_memory_sink_fail_next_fails_that_many_writes() -> None:
    sink = MemorySink()
    boom = RuntimeError("down")
    sink.fail_next(boom, times=2)

    for _ in range(2):
        with pytest.raises(RuntimeError):
            sink.write_batch([Checkpoint("a", 1)])
    sink.write_batch([Checkpoint("a", 2)])

    assert [c.payload for c in sink.checkpoints] == [2]
    assert sink.attempts == 3


def test_memory_sink_fail_session_fails_batches_holding_it() -> None:
    sink = MemorySink()
    sink.fail_session("bad", ValueError("bad"))

    with pytest.raises(ValueError):
        sink.write_batch([Checkpoint("ok", 1), Checkpoint("bad", 2)])
    sink.write_batch([Checkpoint("ok", 3)])

    assert [c.payload for c in sink.checkpoints] == [3]
