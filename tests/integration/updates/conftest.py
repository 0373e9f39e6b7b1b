"""Update tests run their runs in-process through the InMemoryDispatcher (real database); a
pump thread delivers them while the test blocks in `update()`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from update_pump import Pump

from runtime.testing import InMemoryDispatcher, use_dispatcher


@pytest.fixture
def runs(transactional_db: Any) -> Iterator[InMemoryDispatcher]:
    """Executions kept in memory; `runs.join()` runs every due one in this process."""
    with use_dispatcher(InMemoryDispatcher()) as dispatcher:
        assert isinstance(dispatcher, InMemoryDispatcher)
        yield dispatcher


@pytest.fixture
def pump(runs: InMemoryDispatcher) -> Iterator[Pump]:
    """Executions run in a background thread as they come due."""
    running = Pump(runs).start()
    yield running
    running.stop()
    assert running.errors == []
