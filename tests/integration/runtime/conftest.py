"""Fixtures for the runtime's integration tests on real PostgreSQL.

The checkpoint sink commits on a connection of its own, so every test
here uses pytest-django's `transactional_db`. Each test gets a fresh process writer whose sink
records its batches, and enqueues are recorded instead of reaching a broker.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime

import pytest
from django.db import connection
from django.utils import timezone
from run_records import LEASE_TOKEN

from runtime import conf, store
from runtime.checkpoint.batching import Checkpoint
from runtime.core.clock import FakeClock
from runtime.executor import Execution, execute
from runtime.models import Run
from runtime.services import start_run
from runtime.store.sink import DatabaseSink
from runtime.testing import use_dispatcher, use_writer
from tests.support.dispatch import Enqueued, RecordingDispatcher


class RecordingSink(DatabaseSink):
    """The real database sink, remembering every batch it committed."""

    instances: list[RecordingSink] = []

    def __init__(self) -> None:
        super().__init__()
        self.committed: list[list[Checkpoint]] = []
        RecordingSink.instances.append(self)

    def write_batch(self, checkpoints: Sequence[Checkpoint]) -> list[object]:
        receipts = super().write_batch(checkpoints)
        self.committed.append(list(checkpoints))
        return receipts


@pytest.fixture(autouse=True)
def _integration(transactional_db: None) -> Iterator[None]:
    if connection.vendor != "postgresql":
        # tests/conftest.py's DATABASE_URL default comes too late for pytest-django's settings.
        message = (
            "runtime integration tests need PostgreSQL: export DATABASE_URL (scripts/test does)"
        )
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    conf.reset()
    yield
    conf.reset()


@pytest.fixture(autouse=True)
def enqueued() -> Iterator[Enqueued]:
    """Every `enqueue_run` call (start's after-commit and the executor's timers)."""
    with use_dispatcher(RecordingDispatcher()) as dispatcher:
        assert isinstance(dispatcher, RecordingDispatcher)
        yield dispatcher.enqueued


@pytest.fixture(autouse=True)
def sink(_integration: None) -> Iterator[Callable[[], RecordingSink]]:
    """A fresh process checkpoint writer per test; returns a getter for its sink."""
    RecordingSink.instances = []

    def current() -> RecordingSink:
        store.writer()
        return RecordingSink.instances[-1]

    with use_writer(RecordingSink):
        yield current


@pytest.fixture
def leased_run() -> Run:
    """A started run whose lease this test holds, as an executor would."""
    run, _ = start_run("examples.noop_loop", [1])
    Run.objects.filter(id=run.id).update(lease_token=LEASE_TOKEN, lease_expires_at=timezone.now())
    return run


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(datetime(2030, 1, 1, tzinfo=UTC))


@pytest.fixture
def run_now(clock: FakeClock) -> Callable[[uuid.UUID], Execution]:
    """Execute a run synchronously in this thread with the test's clock."""

    def run(run_id: uuid.UUID) -> Execution:
        return execute(run_id, clock=clock)

    return run
