"""Fixtures for the Tasks backend on real PostgreSQL: runs are driven in this thread by the
executor, their enqueues recorded (a real worker runs them in tests/acceptance)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator

import pytest

from runtime import conf
from runtime.executor import execute
from runtime.models import Run
from tests.support.dispatch import Enqueued
from tests.support.integration import enqueued, require_postgres

__all__ = ["enqueued"]


@pytest.fixture(autouse=True)
def _postgres(transactional_db: None, enqueued: Enqueued) -> Iterator[None]:
    """Every test: PostgreSQL, enqueues recorded."""
    require_postgres("Tasks integration tests")
    conf.reset()
    yield
    conf.reset()


@pytest.fixture
def drive() -> Callable[[str], str]:
    """Execute a task's run here until it finishes (retry delays are short); its status."""

    def run(result_id: str, passes: int = 200) -> str:
        run_id = uuid.UUID(result_id)
        for _ in range(passes):
            execute(run_id)
            status = Run.objects.filter(id=run_id).values_list("status", flat=True).get()
            if status in ("completed", "failed", "cancelled"):
                return str(status)
            time.sleep(0.02)
        raise AssertionError(f"task run {run_id} did not finish")

    return run
