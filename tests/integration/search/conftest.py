"""Search tests run their runs in-process through the InMemoryDispatcher (real database)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from runtime.testing import InMemoryDispatcher, use_dispatcher


@pytest.fixture
def runs(transactional_db: Any) -> Iterator[InMemoryDispatcher]:
    """Executions kept in memory; `runs.join()` runs every due one in this process."""
    with use_dispatcher(InMemoryDispatcher()) as dispatcher:
        assert isinstance(dispatcher, InMemoryDispatcher)
        yield dispatcher
