"""The database sink writes on a connection of its own, from whichever thread holds the turn."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator

import pytest
from django.db import connection, connections, transaction
from django.utils import timezone
from run_records import events, noop_step_checkpoint

from runtime.core.errors import LeaseLost
from runtime.models import Run, Step
from runtime.store.history.sink import DatabaseSink


@pytest.fixture
def own_sink() -> Iterator[DatabaseSink]:
    sink = DatabaseSink()
    yield sink
    sink.close()


class Rollback(Exception):
    pass


def test_a_caller_inside_its_own_transaction_still_commits_its_checkpoint(
    own_sink: DatabaseSink, leased_run: Run
) -> None:
    own = connections["default"]

    with pytest.raises(Rollback), transaction.atomic():
        now = timezone.now()
        Run.objects.create(workflow="rolled.back", created_at=now, updated_at=now)
        own_sink.write_batch([noop_step_checkpoint(leased_run.id, 1)])
        assert connections["default"] is own  # the thread's connection is given back
        raise Rollback

    assert Step.objects.filter(run_id=leased_run.id).count() == 1
    assert not Run.objects.filter(workflow="rolled.back").exists()


def test_a_failed_batch_gives_the_thread_its_own_connection_back(
    own_sink: DatabaseSink, leased_run: Run
) -> None:
    own = connections["default"]
    Run.objects.filter(id=leased_run.id).update(lease_token="someone-else")

    with pytest.raises(LeaseLost):
        own_sink.write_batch([noop_step_checkpoint(leased_run.id, 1)])

    assert connections["default"] is own
    assert [e.type for e in events(leased_run.id)] == ["run_created"]


def _sink_pid(sink: DatabaseSink) -> int:
    with sink._connection.lent(), connection.cursor() as cursor:  # the sink's own session
        cursor.execute("SELECT pg_backend_pid()")
        return int(cursor.fetchone()[0])


def _cut(sink: DatabaseSink) -> None:
    """Cut the sink's connection as a failover does: the socket is closed under it (the
    primary's immediate shutdown leaves "server closed the connection unexpectedly", with no
    SQLSTATE, where pg_terminate_backend's goodbye names one)."""
    with sink._connection.lent():
        raw = connection.connection
        with socket.socket(fileno=os.dup(raw.fileno())) as cut:
            cut.shutdown(socket.SHUT_RDWR)


def test_a_connection_cut_since_the_last_batch_is_replaced_before_the_next(
    own_sink: DatabaseSink, leased_run: Run
) -> None:
    # A failover a moment after a batch (issue 56): the next batch's COMMIT, sent on the dead
    # socket, would have an unknown outcome (OutcomeUnknown), and its step would run again.
    own_sink.write_batch([noop_step_checkpoint(leased_run.id, 1)])
    cut = _sink_pid(own_sink)
    _cut(own_sink)

    own_sink.write_batch([noop_step_checkpoint(leased_run.id, 2)])

    assert Step.objects.filter(run_id=leased_run.id).count() == 2
    assert _sink_pid(own_sink) != cut
