"""Fixtures for the operating tests (patched, replay check, fork, retry) on real PostgreSQL.

Everything the runtime sends goes to an `InMemoryDispatcher`; `join()` runs it in this process.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import operate_workflows as flows
import pytest
from django.db import connection

from runtime import conf
from runtime.testing import InMemoryDispatcher, use_dispatcher, use_writer


@pytest.fixture(autouse=True)
def _integration(transactional_db: None) -> Iterator[None]:
    if connection.vendor != "postgresql":
        message = "operating tests need PostgreSQL: export DATABASE_URL (scripts/test does)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
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
