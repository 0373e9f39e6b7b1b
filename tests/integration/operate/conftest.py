"""Fixtures for the operating tests (patched, replay check, fork, retry) on real PostgreSQL.

Everything the runtime sends goes to an `InMemoryDispatcher`; `join()` runs it in this process.
"""

from __future__ import annotations

from collections.abc import Iterator

import operate_workflows as flows
import pytest

from runtime import conf
from runtime.testing import InMemoryDispatcher, use_dispatcher, use_writer
from tests.support.integration import require_postgres


@pytest.fixture(autouse=True)
def _integration(transactional_db: None) -> Iterator[None]:
    require_postgres("operating tests")
    conf.reset()
    flows.reset()
    with use_writer():
        yield
    flows.reset()
    conf.reset()


@pytest.fixture(autouse=True)
def dispatcher() -> Iterator[InMemoryDispatcher]:
    with use_dispatcher(InMemoryDispatcher()) as sent:
        assert isinstance(sent, InMemoryDispatcher)
        yield sent
