"""The sessions of Fanfold's own go past any pooler (runtime.store.direct): the listener, the
liveness lock and the stream slots connect where FANFOLD_DIRECT_DATABASE_URL says, and behind
FANFOLD_DATABASE_POOLED nothing is prepared on the pooled connections."""

from __future__ import annotations

import os
from typing import Any

import psycopg
import pytest
from django.db import connection

from bench.db_connections import ConnectionSampler
from runtime.leases.liveness import process_key
from runtime.store.connection import NEVER_AUTOMATICALLY, raw_connection
from runtime.store.lifecycle.leases import locked_connection
from runtime.store.messaging import stream_slots
from runtime.store.messaging.listener import open_listener

NOWHERE = "postgres://postgres@127.0.0.1:9/"  # the discard port: nothing answers


@pytest.fixture(autouse=True)
def _fresh_slot_session() -> Any:
    stream_slots.close_slot_session()
    yield
    stream_slots.close_slot_session()


def _slot_holders() -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 "
            "AND classid::bigint >= %s AND classid::bigint < %s AND database = "
            "(SELECT oid FROM pg_database WHERE datname = current_database())",
            [stream_slots.NAMESPACE, stream_slots.NAMESPACE + 1000],
        )
        return [int(row[0]) for row in cursor.fetchall()]


def test_direct_sessions_connect_where_the_direct_url_says(fanfold_settings: Any) -> None:
    fanfold_settings(DIRECT_DATABASE_URL=NOWHERE)
    with pytest.raises(psycopg.OperationalError):
        open_listener()
    with pytest.raises(psycopg.OperationalError):
        locked_connection(12345)
    with pytest.raises(psycopg.OperationalError):
        stream_slots.take_slot(7, 2)


def test_direct_sessions_take_the_default_database_name_when_the_url_has_none(
    fanfold_settings: Any,
) -> None:
    params = connection.settings_dict
    fanfold_settings(
        DIRECT_DATABASE_URL=f"postgres://{params['USER']}@{params['HOST']}:{params['PORT']}"
    )
    with locked_connection(4242) as raw:
        name = raw.execute("SELECT current_database()").fetchone()
    assert name == (params["NAME"],)


def test_direct_sessions_take_the_urls_connect_timeout(fanfold_settings: Any) -> None:
    # A failover URL names one (docs/operating.md, "Failover"): libpq waits that long for a
    # host that does not answer before it tries the next.
    params = connection.settings_dict
    fanfold_settings(
        DIRECT_DATABASE_URL=f"postgres://{params['USER']}@{params['HOST']}:{params['PORT']}"
        f"/{params['NAME']}?connect_timeout=3&target_session_attrs=read-write"
    )
    with locked_connection(4243) as raw:
        assert raw.info.get_parameters()["connect_timeout"] == "3"


def test_direct_sessions_stream_slots_live_on_one_session_of_their_own() -> None:
    first = stream_slots.take_slot(7, 2)
    second = stream_slots.take_slot(7, 2)
    assert first is not None and second is not None
    assert {first.slot, second.slot} == {0, 1}
    assert stream_slots.take_slot(7, 2) is None
    holders = _slot_holders()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        own = cursor.fetchone()[0]
    assert len(holders) == 2 and len(set(holders)) == 1 and own not in holders
    stream_slots.release_slot(7, first)
    again = stream_slots.take_slot(7, 2)
    assert again is not None and again.slot == first.slot


def test_direct_sessions_a_lost_slot_session_frees_its_slots_and_releases_nothing_new() -> None:
    old = stream_slots.take_slot(7, 1)
    assert old is not None
    stream_slots.close_slot_session()  # as if the server had ended it
    new = stream_slots.take_slot(7, 1)
    assert new is not None and new.session != old.session
    stream_slots.release_slot(7, old)  # the old session's release must not free the new slot
    assert stream_slots.take_slot(7, 1) is None


def test_direct_sessions_nothing_is_prepared_behind_a_pooler(fanfold_settings: Any) -> None:
    connection.close()
    fanfold_settings(DATABASE_POOLED=True)
    assert raw_connection().prepare_threshold is None
    connection.close()
    fanfold_settings(DATABASE_POOLED=False)
    assert raw_connection().prepare_threshold == NEVER_AUTOMATICALLY


def test_direct_sessions_the_bench_sampler_counts_this_process_connections() -> None:
    port = int(connection.settings_dict["PORT"] or 5432)
    connection.ensure_connection()
    with ConnectionSampler([os.getpid()], [port], interval=0.05) as sampler:
        pass
    assert sampler.peaks.per_process[os.getpid()][port] >= 1
    assert sampler.peaks.server_database >= 1


def test_direct_sessions_no_liveness_key_with_liveness_locks_off(fanfold_settings: Any) -> None:
    fanfold_settings(LIVENESS_LOCKS=False)
    assert process_key() is None
    fanfold_settings(LIVENESS_LOCKS=True)
    assert isinstance(process_key(), int)
