"""Letting go of the test database at the end of a session.

The checkpoint writer, lease heartbeats and branch leases hold connections of their own on
background threads; the test database can only be dropped once those are gone.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.db.backends.base.creation import TEST_DATABASE_PREFIX


@pytest.fixture(scope="session", autouse=True)
def _release_test_database(django_db_setup: None, django_db_blocker: Any) -> Iterator[None]:
    yield
    # Importing runtime needs the app registry pytest sets up.
    from runtime.leases.liveness import release_process_liveness
    from runtime.store import writer
    from runtime.store.messaging.stream_slots import close_slot_session
    from runtime.streaming.wakeups import stop_listening

    writer().close()
    release_process_liveness()
    stop_listening()
    close_slot_session()
    if connection.vendor != "postgresql" or not _on_a_test_database():
        return
    # On a session past any pooler: behind PgBouncer its own server connections to the test
    # database are sessions too, and the drop would find them.
    from runtime.store.direct import open_direct

    with django_db_blocker.unblock(), open_direct() as raw:
        raw.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    connection.close()


def _on_a_test_database() -> bool:
    """Whether this session set up a test database: when none of its tests needs one,
    pytest-django creates none and the connection still names the configured database, whose
    other sessions (a developer's own workers) are not this fixture's to end."""
    return str(connection.settings_dict["NAME"]).startswith(TEST_DATABASE_PREFIX)
