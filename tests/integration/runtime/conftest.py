"""Fixtures for the runtime's integration tests on real PostgreSQL.

The checkpoint sink commits on a connection of its own, so every test
here uses pytest-django's `transactional_db`. Each test gets a fresh process writer whose sink
records its batches, and enqueues are recorded instead of reaching a broker.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone
from run_records import LEASE_TOKEN

import runtime.dispatch
import runtime.store
from runtime import conf
from runtime.checkpoint.batching import Checkpoint
from runtime.checkpoint.process_local import ProcessLocal
from runtime.checkpoint.writer import CheckpointWriter
from runtime.core.clock import FakeClock
from runtime.executor import Execution, execute
from runtime.models import Run
from runtime.services import start_run


class RecordingSink(runtime.store.DatabaseSink):
    """The real database sink, remembering every batch it committed."""

    instances: list[RecordingSink] = []

    def __init__(self) -> None:
        super().__init__()
        self.committed: list[list[Checkpoint]] = []
        RecordingSink.instances.append(self)

    def write_batch(self, checkpoints: Sequence[Checkpoint]) -> None:
        super().write_batch(checkpoints)
        self.committed.append(list(checkpoints))


@dataclass
class Enqueued:
    calls: list[tuple[uuid.UUID, float | None]] = field(default_factory=list)

    def __call__(self, run_id: uuid.UUID, countdown: float | None = None) -> None:
        self.calls.append((run_id, countdown))


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
def enqueued(monkeypatch: pytest.MonkeyPatch) -> Enqueued:
    """Every `enqueue_run` call (start's after-commit and the executor's timers)."""
    recorder = Enqueued()
    monkeypatch.setattr(runtime.dispatch, "enqueue_run", recorder)
    return recorder


@pytest.fixture(autouse=True)
def sink(
    monkeypatch: pytest.MonkeyPatch, _integration: None
) -> Iterator[Callable[[], RecordingSink]]:
    """A fresh process checkpoint writer per test; returns a getter for its sink."""
    RecordingSink.instances = []
    monkeypatch.setattr(runtime.store, "DatabaseSink", RecordingSink)
    local: ProcessLocal[CheckpointWriter] = ProcessLocal(runtime.store._new_writer)
    monkeypatch.setattr(runtime.store, "_process_writer", local)

    def current() -> RecordingSink:
        runtime.store.writer()
        return RecordingSink.instances[-1]

    yield current
    if RecordingSink.instances:
        local.get().close(timeout=10)  # drains, then closes the sink's connection


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


@pytest.fixture
def fanfold_settings(settings: Any) -> Iterator[Callable[..., None]]:
    """Override `FANFOLD_*` settings for one test (before the first execution)."""

    def override(**values: Any) -> None:
        settings.FANFOLD = {**getattr(settings, "FANFOLD", {}), **values}
        conf.reset()

    yield override
    conf.reset()
