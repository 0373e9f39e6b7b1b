"""Callback tests drive executions by hand: enqueueing is recorded, never sent to a worker."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from runtime.core.clock import FakeClock


@pytest.fixture
def enqueued(monkeypatch: pytest.MonkeyPatch) -> list[tuple[uuid.UUID, float | None]]:
    calls: list[tuple[uuid.UUID, float | None]] = []

    def record(run_id: uuid.UUID, countdown: float | None = None) -> None:
        calls.append((run_id, countdown))

    monkeypatch.setattr("runtime.dispatch.enqueue_run", record)
    return calls


@pytest.fixture
def clock() -> FakeClock:
    from callback_flows import T0

    return FakeClock(T0)


@pytest.fixture
def db_ready(transactional_db: Any, enqueued: Any) -> None:
    """The database, with enqueueing recorded."""
