"""Callback tests drive executions by hand: enqueueing is recorded, never sent to a worker."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
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


@pytest.fixture(scope="session", autouse=True)
def _close_checkpoint_writer(django_db_setup: Any, django_db_blocker: Any) -> Iterator[None]:
    yield
    from django.db import connection

    from runtime.store import writer

    writer().close()
    # Background threads (the lease heartbeat) keep their own connections open, which would
    # make dropping the test database fail; they are idle by now.
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
