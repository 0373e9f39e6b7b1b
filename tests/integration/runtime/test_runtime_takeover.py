"""Fast takeover on real PostgreSQL: a dead owner's run lease ends after two looks, a live
owner's never does, and an execution's claim names its process."""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterator
from datetime import timedelta

import psycopg
import pytest
from django.db import connection
from django.utils import timezone

from runtime.executor import execute
from runtime.leases import liveness as liveness_module
from runtime.leases.liveness import Liveness, process_key
from runtime.models import Run
from runtime.recovery.dead_processes import Takeover
from runtime.services import start_run
from tests.support.dispatch import Enqueued
from tests.support.waiting import wait_until


def _lease(run_id: uuid.UUID, owner: int) -> None:
    Run.objects.filter(id=run_id).update(
        status="running",
        lease_token="held",
        lease_owner=owner,
        lease_expires_at=timezone.now() + timedelta(hours=1),
    )


@pytest.fixture
def other_process_lock() -> Iterator[int]:
    """A liveness key held by another session, as a live worker process would hold it."""
    key = secrets.randbits(62) | 1
    params = connection.settings_dict
    with psycopg.connect(
        dbname=params["NAME"],
        user=params["USER"],
        host=params["HOST"],
        port=params["PORT"],
        autocommit=True,
    ) as other:
        other.execute("SELECT pg_advisory_lock(%s)", [key])
        yield key


def test_takeover_ends_a_dead_owners_lease_on_the_second_look(enqueued: Enqueued) -> None:
    run, _ = start_run("examples.noop_loop", [1])
    enqueued.calls.clear()
    _lease(run.id, owner=secrets.randbits(62) | 1)  # nobody holds this key
    takeover = Takeover()

    assert takeover.pass_once() == (0, 0)  # a suspect only
    assert enqueued.calls == []
    assert takeover.pass_once() == (1, 0)
    assert enqueued.calls == [(run.id, None)]
    row = Run.objects.get(id=run.id)
    assert row.lease_expires_at is not None and row.lease_expires_at <= timezone.now()
    assert takeover.pass_once() == (0, 0)  # already ended: not enqueued twice


def test_takeover_never_ends_a_live_owners_lease(
    enqueued: Enqueued, other_process_lock: int
) -> None:
    run, _ = start_run("examples.noop_loop", [1])
    enqueued.calls.clear()
    _lease(run.id, owner=other_process_lock)
    takeover = Takeover()
    for _ in range(3):
        assert takeover.pass_once() == (0, 0)
    assert enqueued.calls == []
    assert Run.objects.get(id=run.id).lease_expires_at > timezone.now()


def test_takeover_spares_an_owner_that_took_its_lock_again_between_looks(
    enqueued: Enqueued,
) -> None:
    run, _ = start_run("examples.noop_loop", [1])
    key = secrets.randbits(62) | 1
    _lease(run.id, owner=key)
    takeover = Takeover()
    assert takeover.pass_once() == (0, 0)  # seen without its lock once (a database restart)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s)", [key])
    try:
        assert takeover.pass_once() == (0, 0)
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [key])


def test_takeover_execution_claims_under_this_process_key(enqueued: Enqueued) -> None:
    run, _ = start_run("examples.noop_loop", [3])
    key = process_key()
    assert key is not None and key == process_key()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted "
            "AND ((classid::bigint << 32) | objid::bigint) = %s",
            [key],
        )
        assert cursor.fetchone() == (1,)
    execute(run.id)
    row = Run.objects.get(id=run.id)
    assert row.status == "completed" and row.lease_owner is None  # released with the lease


def _lock_held(key: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted "
            "AND objsubid = 1 AND ((classid::bigint << 32) | objid::bigint) = %s",
            [key],
        )
        return bool(cursor.fetchone()[0])


def test_takeover_a_process_that_lost_its_lock_tries_again_sooner_until_it_holds_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A failover: the lock's session ends with the old primary, and no server takes it until
    # the standby is promoted. The process tries again every tenth of a second meanwhile, well
    # within the takeover pass's two looks a second apart, so it is not taken for dead.
    liveness = Liveness()
    try:
        wait_until(lambda: _lock_held(liveness.key), 10, message="the lock to be taken")
        assert liveness.interval() == liveness_module.CHECK_INTERVAL

        def no_server(key: int) -> psycopg.Connection:
            raise psycopg.OperationalError("no server takes writes yet")

        monkeypatch.setattr(liveness_module, "locked_connection", no_server)
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' "
                "AND objsubid = 1 AND ((classid::bigint << 32) | objid::bigint) = %s",
                [liveness.key],
            )
        retaking = lambda: liveness.interval() == liveness_module.RETAKE_INTERVAL  # noqa: E731
        wait_until(retaking, 10, message="the lost lock to be noticed")
        monkeypatch.undo()  # the standby is promoted
        wait_until(lambda: _lock_held(liveness.key), 10, message="the lock to be taken again")
        assert liveness.interval() == liveness_module.CHECK_INTERVAL
    finally:
        liveness.close()
