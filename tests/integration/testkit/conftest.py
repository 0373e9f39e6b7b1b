"""The test kit's own tests: each gets a `WorkflowEnvironment` on the test database (PostgreSQL
as the suite runs them; test_testkit_sqlite.py runs them again on SQLite)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from runtime.testing import WorkflowEnvironment


@pytest.fixture
def env(transactional_db: None) -> Iterator[WorkflowEnvironment]:
    with WorkflowEnvironment() as environment:
        yield environment
