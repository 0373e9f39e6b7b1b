"""Fixtures for the runtime's integration tests on real PostgreSQL.

The checkpoint sink commits on a connection of its own, so every test
here uses pytest-django's `transactional_db`. Each test gets a fresh process writer whose sink
records its batches, and enqueues are recorded instead of reaching a broker.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

import pytest
from django.utils import timezone
from run_records import LEASE_TOKEN

from runtime import conf
from runtime.core.clock import FakeClock
from runtime.executor import Execution, execute
from runtime.models import Run
from runtime.services import start_run
from tests.support.dispatch import Enqueued
from tests.support.integration import RecordingSink, enqueued, require_postgres, sink

__all__ = ["enqueued", "sink"]


@pytest.fixture(autouse=True)
def _integration(
    transactional_db: None, enqueued: Enqueued, sink: Callable[[], RecordingSink]
) -> Iterator[None]:
    """Every test: PostgreSQL, enqueues recorded, a fresh writer whose sink records."""
    require_postgres("runtime integration tests")
    conf.reset()
    yield
    conf.reset()


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
