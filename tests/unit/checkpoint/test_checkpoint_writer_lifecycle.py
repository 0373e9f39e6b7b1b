"""CheckpointWriter lifecycle: close() drains, closed writers refuse work, sink cleanup."""

from __future__ import annotations

import threading

import pytest
from checkpoint_fakes import in_thread, wait_for_arrivals

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
    sink = MemorySink(gate=gate)
    writer = CheckpointWriter(sink, BatchLimits(max_items=7))
    writer.submit(Checkpoint("run/0", 0))
    sink.entered.wait(10)
    for i in range(1, 50):
        writer.submit(Checkpoint(f"run/{i % 4}", i))
    closer = threading.Thread(target=writer.close)
    closer.start()
    wait_for_arrivals(writer.intake, 51)  # 50 checkpoints, then the stop marker

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
    gate = threading.Event()
    sink = MemorySink(gate=gate)
    sink.fail_next(WriterBug("bug"))
    writer = CheckpointWriter(sink)
    writer.submit(Checkpoint("warmup", 0))  # the writer thread's batch, which the bug kills
    sink.entered.wait(10)
    outcome: list[BaseException] = []

    def write() -> None:
        try:
            writer.write(Checkpoint("run", 1))
        except CheckpointFailed as exc:
            outcome.append(exc)

    waiter = threading.Thread(target=write)
    waiter.start()
    wait_for_arrivals(writer.intake, 2)  # queued behind the writer thread's batch
    gate.set()
    waiter.join(10)
    writer.close()  # joins the dead thread before excepthook is restored

    assert [type(exc.__cause__) for exc in outcome] == [WriterBug]
    with pytest.raises(CheckpointFailed):  # the dying batch's outcome is unknown
        writer.barrier("warmup")
    with pytest.raises(WriterClosed) as refused:
        writer.submit(Checkpoint("other", 2))
    assert isinstance(refused.value.__cause__, WriterBug)
    assert sink.closed


def test_writer_interrupt_while_a_caller_writes_poisons_its_batch_and_frees_the_sink() -> None:
    sink = MemorySink()
    sink.fail_next(WriterBug("interrupted"))  # escapes the per-batch failure handling
    writer = CheckpointWriter(sink)

    raised = in_thread(lambda: writer.write(Checkpoint("run", 1)))

    assert isinstance(raised, WriterBug)
    with pytest.raises(CheckpointFailed):  # nothing later in that session is written
        writer.write(Checkpoint("run", 2))
    assert in_thread(lambda: writer.write(Checkpoint("other", 3))) is None
    writer.close()
    assert [c.payload for c in sink.checkpoints] == [3]
