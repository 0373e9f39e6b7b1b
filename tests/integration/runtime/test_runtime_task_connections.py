"""Around a task, Fanfold's workers close a failed or old connection and keep a healthy one
(runtime.tasks, with CELERY_DB_REUSE_MAX set so Celery's fix-up leaves them alone)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db import connection

from runtime import tasks

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _age_restored() -> Iterator[None]:
    age = connection.settings_dict["CONN_MAX_AGE"]
    yield
    connection.settings_dict["CONN_MAX_AGE"] = age
    connection.close()


def _backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return int(cursor.fetchone()[0])


def test_task_edges_keep_a_healthy_connection() -> None:
    connection.settings_dict["CONN_MAX_AGE"] = 60
    connection.close()
    before = _backend_pid()
    tasks._close_stale_connections(sender=tasks.execute_run)
    assert _backend_pid() == before


def test_task_edges_close_a_failed_connection() -> None:
    connection.settings_dict["CONN_MAX_AGE"] = 60
    connection.close()
    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    connection.connection.close()  # the server went away under it
    connection.errors_occurred = True
    tasks._close_stale_connections(sender=tasks.execute_run)
    assert connection.connection is None


def test_task_edges_close_a_connection_past_its_age() -> None:
    connection.settings_dict["CONN_MAX_AGE"] = 0
    connection.close()
    connection.ensure_connection()
    tasks._close_stale_connections(sender=tasks.execute_run)
    assert connection.connection is None
