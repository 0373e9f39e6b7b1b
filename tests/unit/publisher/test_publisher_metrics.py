"""The publish counters are consistent under concurrent updates."""

from __future__ import annotations

import threading

from publisher.metrics import PublishCounters


def test_counters_stay_consistent_across_threads() -> None:
    counters = PublishCounters()

    def record() -> None:
        for size in range(1, 101):
            counters.record_request(size, failures=1, raised=size == 100)

    threads = [threading.Thread(target=record) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    snapshot = counters.snapshot()
    assert snapshot.requests == 800
    assert snapshot.messages == 8 * 5050
    assert (snapshot.failures, snapshot.failed_requests) == (800, 8)
    assert snapshot.batch_sizes[100] == 8
    assert snapshot.max_batch_size == 100
    assert snapshot.mean_batch_size == 50.5


def test_counters_reset_to_zero() -> None:
    counters = PublishCounters()
    counters.record_request(3, failures=0, raised=False)

    counters.reset()

    snapshot = counters.snapshot()
    assert (snapshot.requests, snapshot.messages, snapshot.batch_sizes) == (0, 0, {})
    assert (snapshot.max_batch_size, snapshot.mean_batch_size) == (0, 0.0)
