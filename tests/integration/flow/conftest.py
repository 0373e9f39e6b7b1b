"""Flow control on the real database: admission, rate-limit turns, schedule ticks.

Messages go to an `InMemoryDispatcher`; `join()` delivers them in this process.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from django.db import connection

from runtime import conf
from runtime.testing import InMemoryDispatcher, use_dispatcher, use_writer


@pytest.fixture(autouse=True)
def _postgres(transactional_db: None) -> Iterator[None]:
    if connection.vendor != "postgresql":
        message = "flow integration tests need PostgreSQL: export DATABASE_URL"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    conf.reset()
    yield
    conf.reset()


@pytest.fixture
def dispatcher() -> Iterator[InMemoryDispatcher]:
    memory = InMemoryDispatcher()
    with use_writer(), use_dispatcher(memory):
        yield memory
