"""Intake: prompt flush for sync items, the async window, limits, FIFO and the sink's turn."""

from __future__ import annotations

import pytest
from checkpoint_fakes import ScriptedArrivals

from runtime.checkpoint.batching import BatchLimits, Checkpoint, Envelope, Waiter
from runtime.checkpoint.intake import Intake


def env(session: str, *, size: int = 0, sync: bool = False, payload: object = None) -> Envelope:
    return Envelope.write(Checkpoint(session, payload, size, sync), Waiter() if sync else None)


def sessions(batch: list[Envelope] | None) -> list[str]:
    if batch is None:
        raise AssertionError("expected a batch, got None")
    return [e.session for e in batch]


def drain(arrivals: ScriptedArrivals) -> list[list[str]]:
    batches = []
    while (batch := arrivals.next_batch(timeout=0)) is not None:
        batches.append(sessions(batch))
    return batches


def test_intake_sync_item_flushes_with_zero_timed_waits() -> None:
    arrivals = ScriptedArrivals(
        BatchLimits(async_window=60.0), [(0.0, env("s", sync=True)), (0.001, env("late"))]
    )

    assert sessions(arrivals.next_batch()) == ["s"]
    assert arrivals.intake.timed_waits == 0
    assert arrivals.waits == []
    assert arrivals.clock.now == 0.0


def test_intake_sync_batch_takes_only_already_queued_items() -> None:
    script = [(0.0, env("a")), (0.0, env("b", sync=True)), (0.0, env("c")), (1e-6, env("d"))]
    arrivals = ScriptedArrivals(BatchLimits(async_window=60.0), script)

    assert sessions(arrivals.next_batch()) == ["a", "b", "c"]
    assert arrivals.intake.timed_waits == 0
    assert arrivals.clock.now == 0.0


def test_intake_async_start_then_sync_arrival_flushes_one_batch_at_once() -> None:
    script = [(0.0, env("start")), (0.3, env("done", sync=True)), (0.3, env("x")), (0.5, env("y"))]
    arrivals = ScriptedArrivals(BatchLimits(async_window=1.0), script)

    assert sessions(arrivals.next_batch()) == ["start", "done", "x"]
    assert arrivals.intake.timed_waits == 1  # the wait the sync item ended; none after it
    assert arrivals.clock.now == pytest.approx(0.3)


def test_intake_async_only_batch_waits_at_most_window_from_its_oldest_item() -> None:
    script = [(0.0, env("a")), (0.0015, env("b")), (0.01, env("c"))]
    arrivals = ScriptedArrivals(BatchLimits(async_window=0.002), script)

    assert sessions(arrivals.next_batch()) == ["a", "b"]
    assert arrivals.clock.now == pytest.approx(0.002)
    assert [w.timeout for w in arrivals.timed_waits()] == [
        pytest.approx(0.002),
        pytest.approx(0.0005),
    ]


def test_intake_zero_window_never_waits_for_company() -> None:
    script = [(0.0, env("a")), (0.0, env("b")), (1e-9, env("c"))]
    arrivals = ScriptedArrivals(BatchLimits(async_window=0.0), script)

    assert sessions(arrivals.next_batch()) == ["a", "b"]
    assert arrivals.intake.timed_waits == 0


def test_intake_returns_none_when_nothing_is_due_in_time() -> None:
    arrivals = ScriptedArrivals(BatchLimits())

    assert arrivals.next_batch(timeout=0.5) is None
    assert arrivals.clock.now == pytest.approx(0.5)
    assert arrivals.intake.timed_waits == 0  # waiting for a first item is no wait for company


def test_intake_respects_max_items() -> None:
    arrivals = ScriptedArrivals(
        BatchLimits(max_items=2, async_window=0), [(0.0, env(str(i))) for i in range(5)]
    )

    assert drain(arrivals) == [["0", "1"], ["2", "3"], ["4"]]


def test_intake_full_batch_is_due_without_waiting_for_the_window() -> None:
    arrivals = ScriptedArrivals(
        BatchLimits(max_items=2, async_window=60.0), [(0.0, env("a")), (0.0, env("b"))]
    )

    assert sessions(arrivals.next_batch()) == ["a", "b"]
    assert arrivals.intake.timed_waits == 0


def test_intake_respects_max_bytes_and_keeps_the_overflow_queued() -> None:
    arrivals = ScriptedArrivals(
        BatchLimits(max_bytes=100, async_window=0), [(0.0, env(str(i), size=40)) for i in range(3)]
    )

    assert drain(arrivals) == [["0", "1"], ["2"]]


def test_intake_sends_oversize_item_alone() -> None:
    sizes = [10, 500, 10, 10]
    arrivals = ScriptedArrivals(
        BatchLimits(max_bytes=100, async_window=0),
        [(0.0, env(str(i), size=s)) for i, s in enumerate(sizes)],
    )

    assert drain(arrivals) == [["0"], ["1"], ["2", "3"]]


def test_intake_keeps_fifo_across_limits() -> None:
    items = [("a", 60), ("b", 60), ("a", 30), ("c", 200), ("b", 10), ("a", 90)]
    arrivals = ScriptedArrivals(
        BatchLimits(max_bytes=100, async_window=0),
        [(0.0, env(s, size=n, payload=i)) for i, (s, n) in enumerate(items)],
    )

    payloads: list[object] = []
    while (batch := arrivals.next_batch(timeout=0)) is not None:
        payloads.extend(e.checkpoint.payload for e in batch)
    assert payloads == list(range(len(items)))


def test_intake_sync_item_left_by_limits_flushes_next_without_waiting() -> None:
    script = [(0.0, env("a", size=80)), (0.0, env("s", size=80, sync=True)), (0.5, env("z"))]
    arrivals = ScriptedArrivals(BatchLimits(max_bytes=100, async_window=1.0), script)

    assert sessions(arrivals.next_batch()) == ["a"]
    assert sessions(arrivals.next_batch()) == ["s"]
    assert arrivals.intake.timed_waits == 0


def test_intake_stop_ends_batch() -> None:
    script = [(0.0, env("a")), (0.0, Envelope.stop()), (0.0, env("b"))]
    arrivals = ScriptedArrivals(BatchLimits(async_window=60.0), script)

    batch = arrivals.next_batch()
    assert batch is not None
    assert [e.kind.value for e in batch] == ["write", "stop"]
    assert arrivals.intake.timed_waits == 0


def test_intake_caller_leads_when_the_sink_is_free() -> None:
    intake = Intake(BatchLimits(async_window=60.0))
    intake.put(env("start"))

    batch = intake.lead_with(env("done", sync=True))

    assert sessions(batch) == ["start", "done"]
    assert intake.lead_with(env("other", sync=True)) is None  # the turn is taken
    intake.end_turn()
    assert sessions(intake.lead()) == ["other"]


def test_intake_leader_never_takes_the_stop_marker() -> None:
    intake = Intake(BatchLimits())
    intake.put(env("a"))
    intake.put(Envelope.stop())

    assert sessions(intake.lead()) == ["a"]
    intake.end_turn()
    assert intake.lead() is None
    batch = intake.next_batch(timeout=0)
    assert batch is not None and [e.kind.value for e in batch] == ["stop"]


def test_intake_lead_takes_nothing_that_is_not_due() -> None:
    intake = Intake(BatchLimits(async_window=60.0))
    intake.put(env("async"))

    assert intake.lead() is None


def test_intake_writer_waits_while_a_leader_holds_the_turn() -> None:
    intake = Intake(BatchLimits())
    batch = intake.lead_with(env("leader", sync=True))
    intake.put(env("queued", sync=True))

    assert sessions(batch) == ["leader"]
    assert intake.next_batch(timeout=0) is None  # due, but the sink is busy
    intake.end_turn()
    assert sessions(intake.next_batch(timeout=0)) == ["queued"]


@pytest.mark.parametrize(
    "kwargs",
    [{"max_items": 0}, {"max_bytes": 0}, {"async_window": -0.001}],
)
def test_batch_limits_rejects_invalid_values(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        BatchLimits(**kwargs)  # type: ignore[arg-type]


def test_checkpoint_rejects_negative_size() -> None:
    with pytest.raises(ValueError):
        Checkpoint("s", None, size=-1)
