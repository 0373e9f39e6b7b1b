"""The pytest plugin the wheel registers (`pytest11` entry point `fanfold`): fixture
`fanfold_env`, a fresh time-skipping `WorkflowEnvironment` per test (docs/testing.md).

It needs pytest-django, and asks for its `transactional_db`: the checkpoint writer commits on
a connection of its own, which a test inside one open transaction would not see. A test that
asks for `db` too gets the transactional database all the same (pytest-django's rule). The
test kit is imported when the fixture runs: pytest loads its plugins before Django's apps.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from runtime.testing.environment import WorkflowEnvironment


@pytest.fixture(scope="session")
def _fanfold_connections(django_db_setup: Any, django_db_blocker: Any) -> Iterator[None]:
    """At the session's end, before the test database is dropped: the connections the
    runtime keeps beside Django's are closed (a drop fails while any is open)."""
    yield
    from runtime.testing.environment import release_connections

    with django_db_blocker.unblock():
        release_connections()


@pytest.fixture
def fanfold_env(transactional_db: Any, _fanfold_connections: None) -> Iterator[WorkflowEnvironment]:
    """A `WorkflowEnvironment` for this test: virtual time, step mocks, the outside world."""
    from runtime.testing.environment import WorkflowEnvironment

    with WorkflowEnvironment() as env:
        yield env
