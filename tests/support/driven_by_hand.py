"""Fixtures of the integration folders whose tests drive executions by hand (waiting,
callbacks, streams): enqueues recorded, never sent to a worker, and a fake clock.

Each of those conftests re-exports them (`__all__`), as with tests.support.integration.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from runtime.core.clock import FakeClock
from runtime.testing import use_dispatcher
from tests.support.dispatch import RecordingDispatcher

# The fake clock's start: the flows modules of those folders count their timers from it.
T0 = datetime(2030, 1, 1, tzinfo=UTC)


@pytest.fixture
def enqueued() -> Iterator[list[tuple[uuid.UUID, float | None]]]:
    """Every `enqueue_run` as (run id, countdown), in order."""
    with use_dispatcher(RecordingDispatcher()) as dispatcher:
        if not isinstance(dispatcher, RecordingDispatcher):
            raise TypeError(f"expected the recording dispatcher, got {dispatcher!r}")
        yield dispatcher.enqueued.calls


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
def db_ready(transactional_db: Any, enqueued: Any) -> None:
    """The database, with enqueueing recorded."""
