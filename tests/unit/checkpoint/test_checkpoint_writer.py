"""CheckpointWriter happy paths: prompt sync writes, group commit, barriers."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator, Sequence

import pytest
from checkpoint_fakes import in_thread, wait_for_arrivals

from runtime.checkpoint import BatchLimits, Checkpoint, CheckpointWriter, MemorySink

SLOW_WINDOW = BatchLimits(async_window=60.0)  # any wait for company would hang the test


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()  # never leave the writer thread parked in a failed test


def test_writer_write_commits_before_returning() -> None:
    sink = MemorySink()
    writer = CheckpointWriter(sink)
    cp = Checkpoint("run/1", {"step": 1})

    writer.write(cp)

    assert [c.payload for c in sink.checkpoints] == [{"step": 1}]
    assert sink.checkpoints[0].sync is True
    writer.close()


def test_writer_starts_thread_lazily() -> None:
    name = "lazy-writer-under-test"
    writer = CheckpointWriter(MemorySink(), name=name)
    assert name not in {t.name for t in threading.enumerate()}

    writer.submit(Checkpoint("s", None))

    assert name in {t.name for t in threading.enumerate()}
    writer.close()


def test_writer_sync_write_makes_no_timed_waits() -> None:
    writer = CheckpointWriter(MemorySink(), SLOW_WINDOW)

    for i in range(3):
        writer.write(Checkpoint("s", i))

    assert writer.intake.timed_waits == 0
    writer.close()


class ThreadNotingSink(MemorySink):
    """Remembers the name of the thread that wrote each batch."""

    def __init__(self) -> None:
        super().__init__()
        self.written_on: list[str] = []

    def write_batch(self, checkpoints: Sequence[Checkpoint]) -> None:
        self.written_on.append(threading.current_thread().name)
        super().write_batch(checkpoints)


def start_and_complete(writer: CheckpointWriter) -> None:
    writer.submit(Checkpoint("run/1", "step started"))
    writer.write(Checkpoint("run/1", "step completed"))


def test_writer_caller_writes_its_own_batch_when_the_sink_is_free() -> None:
    sink = ThreadNotingSink()
    writer = CheckpointWriter(sink, SLOW_WINDOW)

    assert in_thread(lambda: start_and_complete(writer), name="pool-thread") is None

    assert sink.written_on == ["pool-thread"]  # no hand-over to the writer thread
    assert len(sink.batches[0]) == 2
    writer.close()


def test_writer_main_thread_writes_its_own_batch_with_signal_handlers_held() -> None:
    handled: list[int] = []

    class SignalledSink(ThreadNotingSink):
        def write_batch(self, checkpoints: Sequence[Checkpoint]) -> None:
            signal.raise_signal(signal.SIGUSR1)  # as Celery's soft time limit mid-commit
            assert handled == []  # held: the handler has not run inside the turn
            super().write_batch(checkpoints)

    sink = SignalledSink()
    writer = CheckpointWriter(sink, SLOW_WINDOW, name="main-thread-helper")
    previous = signal.signal(signal.SIGUSR1, lambda signum, frame: handled.append(signum))
    try:
        start_and_complete(writer)  # pytest runs tests in the main thread, as prefork runs tasks
    finally:
        signal.signal(signal.SIGUSR1, previous)

    assert sink.written_on == [threading.main_thread().name]  # no hand-over to the writer thread
    assert len(sink.batches[0]) == 2
    assert handled == [signal.SIGUSR1]  # run once the turn was given back
    writer.close()


def test_writer_async_start_and_sync_completion_share_one_batch() -> None:
    sink = MemorySink()
    writer = CheckpointWriter(sink, SLOW_WINDOW)

    writer.submit(Checkpoint("run/1", "step started"))
    writer.write(Checkpoint("run/1", "step completed"))

    assert [[c.payload for c in b] for b in sink.batches] == [["step started", "step completed"]]
    writer.close()


def test_writer_groups_concurrent_sync_writes(gate: threading.Event) -> None:
    sink = MemorySink(gate=gate)
    writer = CheckpointWriter(sink)
    first = threading.Thread(target=writer.write, args=(Checkpoint("first", 0),))
    first.start()
    sink.entered.wait(10)  # the writer is now holding a transaction open
    threads = [
        threading.Thread(target=writer.write, args=(Checkpoint(f"run/{i}", i),)) for i in range(20)
    ]
    for thread in threads:
        thread.start()
    wait_for_arrivals(writer.intake, 21)

    gate.set()
    for thread in [first, *threads]:
        thread.join(10)

    assert len(sink.batches) == 2
    assert {c.session for c in sink.batches[1]} == {f"run/{i}" for i in range(20)}
    assert writer.stats.max_batch_items == 20
    assert writer.stats.committed_batches == 2
    writer.close()


def test_writer_keeps_fifo_per_session_across_batches() -> None:
    sink = MemorySink()
    writer = CheckpointWriter(sink, BatchLimits(max_items=3))

    for i in range(10):
        writer.submit(Checkpoint("a" if i % 2 else "b", i))
    writer.close()

    assert [c.payload for c in sink.checkpoints] == list(range(10))
    assert all(len(b) <= 3 for b in sink.batches)


def test_writer_barrier_waits_for_earlier_async_checkpoints(gate: threading.Event) -> None:
    sink = MemorySink(gate=gate)
    writer = CheckpointWriter(sink)
    seen_at_barrier: list[object] = []
    writer.submit(Checkpoint("run", 1))
    sink.entered.wait(10)
    writer.submit(Checkpoint("run", 2))

    def barrier() -> None:
        writer.barrier("run")
        seen_at_barrier.extend(c.payload for c in sink.checkpoints)

    waiter = threading.Thread(target=barrier)
    waiter.start()
    wait_for_arrivals(writer.intake, 3)
    assert waiter.is_alive()  # the writer is parked in the gated transaction

    gate.set()
    waiter.join(10)

    assert seen_at_barrier == [1, 2]
    assert all(c.payload is not None for c in sink.checkpoints)  # barriers reach no sink
    writer.close()


def test_writer_barrier_on_idle_writer_returns_at_once() -> None:
    writer = CheckpointWriter(MemorySink(), name="idle-barrier-writer")

    writer.barrier("run")

    assert "idle-barrier-writer" not in {t.name for t in threading.enumerate()}
