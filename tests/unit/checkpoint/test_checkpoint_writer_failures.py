"""CheckpointWriter failures: every waiter hears, sessions are poisoned, others are isolated."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from checkpoint_fakes import wait_for_arrivals

from runtime.checkpoint import (
    Checkpoint,
    CheckpointFailed,
    CheckpointWriter,
    MemorySink,
)
from runtime.checkpoint.errors import OutcomeUnknown


class SinkDown(Exception):
    pass


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


def write_in_thread(
    writer: CheckpointWriter, cp: Checkpoint
) -> tuple[threading.Thread, list[BaseException | None]]:
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            writer.write(cp)
        except CheckpointFailed as exc:
            outcome.append(exc)
        else:
            outcome.append(None)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, outcome


def write_as_one_batch(
    sink: MemorySink, gate: threading.Event, sessions: list[str]
) -> tuple[CheckpointWriter, dict[str, list[BaseException | None]]]:
    """Write one checkpoint per session while the gated sink holds a warm-up batch, so that
    they reach the sink together; returns the writer and each session's outcome."""
    writer = CheckpointWriter(sink)
    warmup, _ = write_in_thread(writer, Checkpoint("warmup", 0))
    sink.entered.wait(10)  # the sink is busy: the writes queue up into one batch
    calls = {s: write_in_thread(writer, Checkpoint(s, s)) for s in sessions}
    wait_for_arrivals(writer.intake, len(sessions) + 1)
    gate.set()
    for thread in [warmup, *(thread for thread, _ in calls.values())]:
        thread.join(10)
    return writer, {s: outcome for s, (_, outcome) in calls.items()}


def test_writer_failure_reaches_every_waiter_of_the_batch(gate: threading.Event) -> None:
    sink = MemorySink(gate=gate)
    boom = SinkDown("connection lost")
    sink.fail_session("run", boom)
    writer = CheckpointWriter(sink)
    warmup, _ = write_in_thread(writer, Checkpoint("warmup", 0))
    sink.entered.wait(10)
    calls = [write_in_thread(writer, Checkpoint("run", i)) for i in range(5)]
    wait_for_arrivals(writer.intake, 6)

    gate.set()
    for thread in [warmup, *(thread for thread, _ in calls)]:
        thread.join(10)

    errors = [outcome[0] for _, outcome in calls]
    assert all(isinstance(e, CheckpointFailed) for e in errors)
    assert all(e.__cause__ is boom and e.session == "run" for e in errors)  # type: ignore[union-attr]
    assert len({id(e) for e in errors}) == 5  # one exception per raise, never shared
    assert writer.stats.failed_batches == 1  # single session: not retried by the core
    writer.close()


def test_writer_poisons_later_checkpoints_of_failed_session(gate: threading.Event) -> None:
    sink = MemorySink(gate=gate)
    boom = SinkDown("constraint violated")
    writer = CheckpointWriter(sink)
    writer.submit(Checkpoint("bad", 1))
    sink.entered.wait(10)
    writer.submit(Checkpoint("bad", 2))  # queued behind the failing one
    writer.submit(Checkpoint("ok", 3))
    sink.fail_next(boom)

    gate.set()
    with pytest.raises(CheckpointFailed) as raised:
        writer.write(Checkpoint("bad", 4))
    writer.barrier("ok")

    assert raised.value.__cause__ is boom
    with pytest.raises(CheckpointFailed):
        writer.submit(Checkpoint("bad", 5))
    with pytest.raises(CheckpointFailed):
        writer.barrier("bad")
    assert [c.payload for c in sink.checkpoints] == [3]
    writer.close()


def test_writer_isolates_failure_to_the_failing_session(gate: threading.Event) -> None:
    sink = MemorySink(gate=gate)
    sink.fail_session("bad", SinkDown("bad payload"))

    writer, outcomes = write_as_one_batch(sink, gate, ["good/1", "bad", "good/2"])

    assert outcomes["good/1"] == [None]
    assert outcomes["good/2"] == [None]
    assert isinstance(outcomes["bad"][0], CheckpointFailed)
    assert sorted(str(c.payload) for c in sink.checkpoints) == ["0", "good/1", "good/2"]
    # warmup + the combined batch + one retry per session.
    assert (writer.stats.batches, writer.stats.failed_batches) == (5, 2)
    writer.close()


def test_writer_barrier_raises_failure_of_earlier_async_checkpoint() -> None:
    sink = MemorySink()
    boom = SinkDown("disk full")
    sink.fail_next(boom)
    writer = CheckpointWriter(sink)
    writer.submit(Checkpoint("run", 1))

    with pytest.raises(CheckpointFailed) as raised:
        writer.barrier("run")

    assert raised.value.__cause__ is boom
    assert raised.value.session == "run"
    with pytest.raises(CheckpointFailed):
        writer.write(Checkpoint("run", 2))
    writer.close()


def test_writer_reset_session_accepts_writes_again() -> None:
    sink = MemorySink()
    sink.fail_next(SinkDown("transient"))
    writer = CheckpointWriter(sink)
    with pytest.raises(CheckpointFailed):
        writer.write(Checkpoint("run", 1))

    writer.reset_session("run")
    writer.write(Checkpoint("run", 2))

    assert [c.payload for c in sink.checkpoints] == [2]
    writer.close()


def test_checkpoint_failed_pickles_with_session() -> None:
    import pickle

    exc = CheckpointFailed.caused_by("run/1", SinkDown("x"))

    copy = pickle.loads(pickle.dumps(exc))

    assert (copy.session, str(copy), copy.code) == ("run/1", str(exc), "checkpoint_failed")


def test_writer_never_rewrites_a_batch_whose_outcome_is_unknown(gate: threading.Event) -> None:
    sink = MemorySink(gate=gate)
    sink.fail_session("one", OutcomeUnknown("COMMIT was cut off"))

    writer, outcomes = write_as_one_batch(sink, gate, ["one", "two"])

    assert sink.attempts == 2  # the warm-up, then the batch once: not split and rewritten
    assert all(isinstance(outcome[0], CheckpointFailed) for outcome in outcomes.values())
    assert [str(c.payload) for c in sink.checkpoints] == ["0"]
    writer.close()
