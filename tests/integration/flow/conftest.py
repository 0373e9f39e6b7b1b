"""Flow control on the real database: admission, rate-limit turns, schedule ticks.

Messages go to an `InMemoryDispatcher`; `join()` delivers them in this process.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from runtime import conf
from runtime.testing import InMemoryDispatcher, use_dispatcher, use_writer
from tests.support.integration import require_postgres


@pytest.fixture(autouse=True)
def _postgres(transactional_db: None) -> Iterator[None]:
    require_postgres("flow integration tests")
    conf.reset()
    yield
    conf.reset()


@pytest.fixture
def dispatcher() -> Iterator[InMemoryDispatcher]:
    memory = InMemoryDispatcher()
    with use_writer(), use_dispatcher(memory):
        yield memory
