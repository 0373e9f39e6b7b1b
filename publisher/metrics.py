"""Process-wide publish counters, read by the benchmark and by operators, and the publish
metrics Prometheus scrapes.

Every transport call is one request: a ``send`` counts as a request of size 1, a ``send_batch``
as a request of its length.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field

from prometheus_client import Counter as PromCounter
from prometheus_client import Histogram

PUBLISH_BATCH = Histogram(
    "fanfold_publish_batch_size",
    "Messages per broker request.",
    buckets=(1, 2, 5, 10, 20, 50, 100),
)
PUBLISH_FAILED = PromCounter(
    "fanfold_publish_failed_messages",
    "Messages whose publish failed, by whether trying again may help.",
    ["retryable"],
)
_FAILED_RETRYABLE = PUBLISH_FAILED.labels("true")
_FAILED_FINAL = PUBLISH_FAILED.labels("false")
_enabled = True


def set_enabled(enabled: bool) -> None:
    """Turn the Prometheus publish metrics on or off (the counters below always count)."""
    global _enabled
    _enabled = enabled


def observe_request(size: int, failed_retryable: int, failed: int) -> None:
    """One broker request of ``size`` messages, ``failed`` of which failed (some retryable)."""
    if not _enabled:
        return
    PUBLISH_BATCH.observe(size)
    if failed_retryable:
        _FAILED_RETRYABLE.inc(failed_retryable)
    if failed > failed_retryable:
        _FAILED_FINAL.inc(failed - failed_retryable)


@dataclass(frozen=True)
class CounterSnapshot:
    """The counters at one moment.

    ``batch_sizes`` maps a request size to the number of requests of that size; ``failures``
    counts messages whose outcome was an error and ``failed_requests`` the transport calls that
    raised.
    """

    requests: int = 0
    messages: int = 0
    failures: int = 0
    failed_requests: int = 0
    batch_sizes: dict[int, int] = field(default_factory=dict)

    @property
    def max_batch_size(self) -> int:
        """The largest request so far, 0 if none."""
        return max(self.batch_sizes, default=0)

    @property
    def mean_batch_size(self) -> float:
        """Messages per request, 0.0 if none."""
        return self.messages / self.requests if self.requests else 0.0


class PublishCounters:
    """Thread-safe counters of publish requests, messages, request sizes and failures."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests = 0
        self._messages = 0
        self._failures = 0
        self._failed_requests = 0
        self._sizes: Counter[int] = Counter()

    def record_request(self, size: int, *, failures: int, raised: bool) -> None:
        """Count one transport call of ``size`` messages, ``failures`` of which failed."""
        with self._lock:
            self._requests += 1
            self._messages += size
            self._failures += failures
            self._failed_requests += int(raised)
            self._sizes[size] += 1

    def snapshot(self) -> CounterSnapshot:
        """A consistent copy of the counters."""
        with self._lock:
            return CounterSnapshot(
                requests=self._requests,
                messages=self._messages,
                failures=self._failures,
                failed_requests=self._failed_requests,
                batch_sizes=dict(sorted(self._sizes.items())),
            )

    def reset(self) -> None:
        """Set every counter back to zero."""
        with self._lock:
            self._requests = self._messages = self._failures = self._failed_requests = 0
            self._sizes.clear()


counters = PublishCounters()
