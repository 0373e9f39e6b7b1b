"""Rate-limit turns on a connection that outlives Celery's closing of Django's connections."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection, connections
from django.utils import timezone

from runtime.store import connection as store_connection
from runtime.store.connection import KeptConnections
from runtime.store.flow import ratelimit as store_ratelimit
from tests.support.waiting import wait_until


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
    _terminate(first)
    # Used again soon: the server's goodbye waits on the socket, so the connection is tested
    # and replaced before a statement fails on it.
    second = _backend_pid(kept)
    assert second != first
    # After an idle spell it is tested first as well.
    monkeypatch.setattr(store_connection, "KEPT_IDLE_CHECK", 0.0)
    _terminate(second)
    assert _backend_pid(kept) not in (first, second)


def _terminate(pid: int) -> None:
    """End the session `pid` from the server's side and wait until it is gone."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [pid])

    def gone() -> bool:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", [pid])
            return not cursor.fetchone()[0]

    wait_until(gone, 10, message=f"session {pid} to end")


def test_flow_turns_and_hand_backs_leave_djangos_own_connection_closed() -> None:
    connections.close_all()
    now = timezone.now()
    store_ratelimit.reserve_turn("tests.kept", 0.01, uuid.uuid4(), 1, now)
    store_ratelimit.retake_turn("tests.kept", 0.01, uuid.uuid4(), 1, now)
    no_such_claim = store_ratelimit.hand_back_claim(uuid.uuid4(), uuid.uuid4(), 1, now)
    assert no_such_claim is False
    assert connection.connection is None  # a task that only takes turns opens no connection
