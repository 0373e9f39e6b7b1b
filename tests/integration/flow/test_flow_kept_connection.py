"""Rate-limit turns on a connection that outlives Celery's closing of Django's connections."""

from __future__ import annotations

import uuid

import pytest
from django.db import OperationalError, connection, connections
from django.utils import timezone

from runtime.store import connection as store_connection
from runtime.store.connection import KeptConnections
from runtime.store.flow import ratelimit as store_ratelimit


def _backend_pid(kept: KeptConnections) -> int:
    with kept.lent(), connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return int(cursor.fetchone()[0])


def test_flow_kept_connection_survives_django_closing_its_connections_between_tasks() -> None:
    kept = KeptConnections()
    first = _backend_pid(kept)
    connections.close_all()  # what Celery's Django fix-up does before and after every task
    assert _backend_pid(kept) == first
    with connection.cursor() as cursor:  # Django's own connection is another one
        cursor.execute("SELECT pg_backend_pid()")
        assert cursor.fetchone()[0] != first


def test_flow_kept_connection_dropped_by_the_server_is_replaced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kept = KeptConnections()
    first = _backend_pid(kept)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [first])
    # Used again soon, the dead socket fails the statement; the connection is closed...
    with pytest.raises(OperationalError):
        _backend_pid(kept)
    # ...and the next use connects anew.
    second = _backend_pid(kept)
    assert second != first
    # After an idle spell it is tested first, so a dropped one never fails a statement.
    monkeypatch.setattr(store_connection, "KEPT_IDLE_CHECK", 0.0)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [second])
    assert _backend_pid(kept) not in (first, second)


def test_flow_turns_and_hand_backs_leave_djangos_own_connection_closed() -> None:
    connections.close_all()
    now = timezone.now()
    store_ratelimit.reserve_turn("tests.kept", 0.01, uuid.uuid4(), 1, now)
    store_ratelimit.retake_turn("tests.kept", 0.01, uuid.uuid4(), 1, now)
    no_such_claim = store_ratelimit.hand_back_claim(uuid.uuid4(), uuid.uuid4(), 1, now)
    assert no_such_claim is False
    assert connection.connection is None  # a task that only takes turns opens no connection
