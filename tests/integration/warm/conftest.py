"""Warm-resume tests run their runs in this thread through the InMemoryDispatcher (real
database): this thread's warm cache is the worker's."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from runtime.testing import InMemoryDispatcher, use_dispatcher
from runtime.warm.cache import warm_runs


@pytest.fixture
def runs(transactional_db: Any) -> Iterator[InMemoryDispatcher]:
    """Executions kept in memory; `runs.join()` runs every due one in this thread."""
    warm_runs().clear()
    with use_dispatcher(InMemoryDispatcher()) as dispatcher:
        assert isinstance(dispatcher, InMemoryDispatcher)
        yield dispatcher
    warm_runs().clear()
