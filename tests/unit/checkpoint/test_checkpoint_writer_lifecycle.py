"""CheckpointWriter lifecycle: close() drains, closed writers refuse work, sink cleanup."""

from __future__ import annotations

import threading

import pytest
from checkpoint_fakes import CountingQueue

from runtime.checkpoint import (
    Checkpoint,
    CheckpointFailed,
    CheckpointWriter,
    MemorySink,
    WriterClosed,
)
from runtime.checkpoint.batching import BatchLimits


class ThreadRecordingSink(MemorySink):
    closed_on: str | None = None

    def close(self) -> None:
        self.closed_on = threading.current_thread().name
        super().close()


def test_writer_close_drains_queued_checkpoints() -> None:
    gate = threading.Event()
    queue = CountingQueue()
    sink = MemorySink(gate=gate)
    writer = CheckpointWriter(sink, BatchLimits(max_items=7), queue_factory=lambda: queue)
    writer.submit(Checkpoint("run/0", 0))
    sink.entered.wait(10)
    for i in range(1, 50):
        writer.submit(Checkpoint(f"run/{i % 4}", i))
    closer = threading.Thread(target=writer.close)
    closer.start()
    queue.wait_for_puts(51)  # 50 checkpoints, then the stop marker

    gate.set()
    closer.join(10)

    assert not closer.is_alive()
    assert [c.payload for c in sink.checkpoints] == list(range(50))
    assert sink.closed


def test_writer_refuses_work_after_close() -> None:
    writer = CheckpointWriter(MemorySink())
    writer.submit(Checkpoint("run", 1))
    writer.close()

    with pytest.raises(WriterClosed):
        writer.submit(Checkpoint("run", 2))
    with pytest.raises(WriterClosed):
        writer.write(Checkpoint("run", 3))
    writer.barrier("run")  # everything was drained: nothing to wait for
    writer.close()  # idempotent


def test_writer_close_without_start_leaves_sink_alone() -> None:
    sink = MemorySink()
    writer = CheckpointWriter(sink)

    writer.close()

    assert not sink.closed
    with pytest.raises(WriterClosed):
        writer.submit(Checkpoint("run", 1))


def test_writer_closes_sink_on_writer_thread() -> None:
    sink = ThreadRecordingSink()
    writer = CheckpointWriter(sink, name="sink-close-writer")
    writer.write(Checkpoint("run", 1))

    writer.close()

    assert sink.closed_on == "sink-close-writer"


def test_writer_close_times_out_while_sink_is_stuck() -> None:
    gate = threading.Event()
    sink = MemorySink(gate=gate)
    writer = CheckpointWriter(sink)
    writer.submit(Checkpoint("run", 1))
    sink.entered.wait(10)

    with pytest.raises(TimeoutError):
        writer.close(timeout=0.01)

    gate.set()
    writer.close()
    assert [c.payload for c in sink.checkpoints] == [1]


def test_writer_stats_count_transactions_and_checkpoints() -> None:
    writer = CheckpointWriter(MemorySink())
    for i in range(3):
        writer.write(Checkpoint("run", i))
    writer.close()

    stats = writer.stats
    assert (stats.batches, stats.committed_batches, stats.failed_batches) == (3, 3, 0)
    assert (stats.checkpoints, stats.max_batch_items) == (3, 1)


class WriterBug(BaseException):
    """Not an Exception: escapes the per-batch failure handling, like a bug would."""


def test_writer_thread_death_fails_waiters_and_refuses_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(threading, "excepthook", lambda args: None)
    sink = MemorySink()
    sink.fail_next(WriterBug("bug"))
    writer = CheckpointWriter(sink)

    with pytest.raises(CheckpointFailed) as raised:
        writer.write(Checkpoint("run", 1))
    writer.close()  # joins the dead thread before excepthook is restored

    assert isinstance(raised.value.__cause__, WriterBug)
    with pytest.raises(WriterClosed) as refused:
        writer.submit(Checkpoint("other", 2))
    assert isinstance(refused.value.__cause__, WriterBug)
    assert sink.closed
