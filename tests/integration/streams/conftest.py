"""Stream tests drive executions by hand: enqueueing is recorded, never sent to a worker."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from runtime.core.clock import FakeClock
from runtime.testing import use_dispatcher
from tests.support.dispatch import RecordingDispatcher


@pytest.fixture
def enqueued() -> Iterator[list[tuple[uuid.UUID, float | None]]]:
    with use_dispatcher(RecordingDispatcher()) as dispatcher:
        assert isinstance(dispatcher, RecordingDispatcher)
        yield dispatcher.enqueued.calls


@pytest.fixture
def clock() -> FakeClock:
    from streams_flows import T0

    return FakeClock(T0)


@pytest.fixture
def db_ready(transactional_db: Any, enqueued: Any) -> None:
    """The database, with enqueueing recorded."""
