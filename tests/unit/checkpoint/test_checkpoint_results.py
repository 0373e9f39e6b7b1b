"""The writer hands each caller what the sink returned for its checkpoint; sessionless writes
fail alone and poison nothing."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from runtime.checkpoint import Checkpoint, CheckpointFailed, CheckpointWriter
from runtime.checkpoint.batching import NO_SESSION


class _EchoSink:
    """Returns each checkpoint's payload doubled; fails a batch holding the payload -1."""

    def write_batch(self, checkpoints: Sequence[Checkpoint]) -> list[object]:
        payloads = [cp.payload for cp in checkpoints]
        if -1 in payloads:
            raise RuntimeError("refused")
        return [2 * p for p in payloads if isinstance(p, int)]

    def close(self) -> None:
        pass


def test_write_all_returns_what_the_sink_returned_for_each_checkpoint() -> None:
    writer = CheckpointWriter(_EchoSink())
    try:
        results = writer.write_all([Checkpoint(NO_SESSION, n, 8, sync=True) for n in (1, 2, 3)])
    finally:
        writer.close()
    assert results == [2, 4, 6]


def test_a_failed_sessionless_write_poisons_nothing() -> None:
    writer = CheckpointWriter(_EchoSink())
    try:
        with pytest.raises(CheckpointFailed):
            writer.write(Checkpoint(NO_SESSION, -1, 8, sync=True))
        assert writer.write_all([Checkpoint(NO_SESSION, 5, 8, sync=True)]) == [10]
    finally:
        writer.close()
