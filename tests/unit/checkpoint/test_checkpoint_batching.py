"""BatchCollector: prompt flush for sync items, the async window, limits and carry."""

from __future__ import annotations

import pytest
from checkpoint_fakes import FakeClock, ScriptedQueue

from runtime.checkpoint.batching import BatchCollector, BatchLimits, Checkpoint, Envelope


def env(session: str, *, size: int = 0, sync: bool = False, payload: object = None) -> Envelope:
    return Envelope.write(Checkpoint(session, payload, size, sync))


def sessions(batch: list[Envelope] | None) -> list[str]:
    if batch is None:
        raise AssertionError("expected a batch, got None")
    return [e.session for e in batch]


def drain(collector: BatchCollector) -> list[list[str]]:
    batches = []
    while (batch := collector.collect(first_timeout=0)) is not None:
        batches.append(sessions(batch))
    return batches


def test_collector_sync_item_flushes_with_zero_timed_waits() -> None:
    clock = FakeClock()
    q = ScriptedQueue(clock, [(0.0, env("s", sync=True)), (0.001, env("late"))])
    collector = BatchCollector(q, BatchLimits(async_window=60.0), clock)

    assert sessions(collector.collect()) == ["s"]
    assert collector.timed_waits == 0
    assert q.timed_gets == []
    assert clock.now == 0.0


def test_collector_sync_batch_takes_only_already_queued_items() -> None:
    clock = FakeClock()
    script = [(0.0, env("a")), (0.0, env("b", sync=True)), (0.0, env("c")), (1e-6, env("d"))]
    q = ScriptedQueue(clock, script)
    collector = BatchCollector(q, BatchLimits(async_window=60.0), clock)

    assert sessions(collector.collect()) == ["a", "b", "c"]
    assert collector.timed_waits == 0
    assert q.timed_gets == []


def test_collector_async_start_then_sync_arrival_flushes_one_batch_at_once() -> None:
    clock = FakeClock()
    script = [(0.0, env("start")), (0.3, env("done", sync=True)), (0.3, env("x")), (0.5, env("y"))]
    q = ScriptedQueue(clock, script)
    collector = BatchCollector(q, BatchLimits(async_window=1.0), clock)

    assert sessions(collector.collect()) == ["start", "done", "x"]
    assert collector.timed_waits == 1  # the wait the sync item ended; none after it
    assert clock.now == pytest.approx(0.3)


def test_collector_async_only_batch_waits_at_most_window() -> None:
    clock = FakeClock()
    script = [(0.0, env("a")), (0.0015, env("b")), (0.01, env("c"))]
    q = ScriptedQueue(clock, script)
    collector = BatchCollector(q, BatchLimits(async_window=0.002), clock)

    assert sessions(collector.collect()) == ["a", "b"]
    assert clock.now == pytest.approx(0.002)
    assert [g.timeout for g in q.timed_gets] == [pytest.approx(0.002), pytest.approx(0.0005)]


def test_collector_zero_window_never_waits() -> None:
    clock = FakeClock()
    q = ScriptedQueue(clock, [(0.0, env("a")), (0.0, env("b")), (1e-9, env("c"))])
    collector = BatchCollector(q, BatchLimits(async_window=0.0), clock)

    assert sessions(collector.collect()) == ["a", "b"]
    assert q.timed_gets == []


def test_collector_returns_none_when_first_item_times_out() -> None:
    clock = FakeClock()
    q = ScriptedQueue(clock)
    collector = BatchCollector(q, BatchLimits(), clock)

    assert collector.collect(first_timeout=0.5) is None
    assert clock.now == pytest.approx(0.5)
    assert collector.timed_waits == 0  # the wait for a first item is not counted


def test_collector_respects_max_items() -> None:
    clock = FakeClock()
    q = ScriptedQueue(clock, [(0.0, env(str(i))) for i in range(5)])
    collector = BatchCollector(q, BatchLimits(max_items=2, async_window=0), clock)

    assert drain(collector) == [["0", "1"], ["2", "3"], ["4"]]


def test_collector_respects_max_bytes_and_carries_overflow() -> None:
    clock = FakeClock()
    q = ScriptedQueue(clock, [(0.0, env(str(i), size=40)) for i in range(3)])
    collector = BatchCollector(q, BatchLimits(max_bytes=100, async_window=0), clock)

    assert drain(collector) == [["0", "1"], ["2"]]


def test_collector_sends_oversize_item_alone() -> None:
    clock = FakeClock()
    sizes = [10, 500, 10, 10]
    q = ScriptedQueue(clock, [(0.0, env(str(i), size=s)) for i, s in enumerate(sizes)])
    collector = BatchCollector(q, BatchLimits(max_bytes=100, async_window=0), clock)

    assert drain(collector) == [["0"], ["1"], ["2", "3"]]


def test_collector_keeps_fifo_across_carry() -> None:
    clock = FakeClock()
    items = [("a", 60), ("b", 60), ("a", 30), ("c", 200), ("b", 10), ("a", 90)]
    q = ScriptedQueue(clock, [(0.0, env(s, size=n, payload=i)) for i, (s, n) in enumerate(items)])
    collector = BatchCollector(q, BatchLimits(max_bytes=100, async_window=0), clock)

    payloads: list[object] = []
    while (batch := collector.collect(first_timeout=0)) is not None:
        payloads.extend(e.checkpoint.payload for e in batch)
    assert payloads == list(range(len(items)))


def test_collector_sync_carry_flushes_next_batch_without_waiting() -> None:
    clock = FakeClock()
    script = [(0.0, env("a", size=80)), (0.0, env("s", size=80, sync=True)), (0.5, env("z"))]
    q = ScriptedQueue(clock, script)
    collector = BatchCollector(q, BatchLimits(max_bytes=100, async_window=1.0), clock)

    assert sessions(collector.collect()) == ["a"]
    assert sessions(collector.collect()) == ["s"]
    assert collector.timed_waits == 0


def test_collector_stop_ends_batch() -> None:
    clock = FakeClock()
    q = ScriptedQueue(clock, [(0.0, env("a")), (0.0, Envelope.stop()), (0.0, env("b"))])
    collector = BatchCollector(q, BatchLimits(async_window=60.0), clock)

    batch = collector.collect()
    assert batch is not None
    assert [e.kind.value for e in batch] == ["write", "stop"]
    assert collector.timed_waits == 0


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
