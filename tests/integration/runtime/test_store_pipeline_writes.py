"""A checkpoint transaction's statements leave for PostgreSQL in one write
(runtime.store.pipeline_writes): what a pipeline executes reaches the server only when the
block ends, and its results and errors read back as psycopg's own pipeline gives them."""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest
from django.db import connection

from runtime.store import dialect
from runtime.store.connection import raw_connection
from runtime.store.pipeline_writes import SUPPORTED, sent_together


@pytest.fixture
def observer() -> Iterator[psycopg.Connection]:
    """A second session, which sees the advisory locks the first one's statements take."""
    params = connection.settings_dict
    with psycopg.connect(
        dbname=params["NAME"], user=params["USER"], host=params["HOST"], port=params["PORT"],
        autocommit=True,
    ) as other:  # fmt: skip
        yield other


def held(observer: psycopg.Connection, key: int) -> bool:
    row = observer.execute(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
        " AND (classid::bigint << 32) | objid::bigint = %s",
        [key],
    ).fetchone()
    return bool(row and row[0])


def test_statements_reach_the_server_only_when_the_block_ends(
    observer: psycopg.Connection,
) -> None:
    assert SUPPORTED  # the installed psycopg has the pipeline this reaches into
    key = secrets.randbits(31)
    raw = raw_connection()
    raw.autocommit = True
    cursor = raw.cursor()
    with raw.pipeline() as pipeline:
        with sent_together(pipeline):
            cursor.execute("SELECT pg_advisory_lock(%s)", [key])
            time.sleep(0.2)  # a statement sent at once would be running by now
            assert not held(observer, key)
        pipeline.sync()
        assert held(observer, key)
    raw.execute("SELECT pg_advisory_unlock(%s)", [key])


def test_a_plain_pipeline_sends_at_once(observer: psycopg.Connection) -> None:
    """What the block changes: without it the same statement runs before the pipeline ends."""
    key = secrets.randbits(31)
    raw = raw_connection()
    raw.autocommit = True
    with raw.pipeline():
        raw.cursor().execute("SELECT pg_advisory_lock(%s)", [key])
        deadline = time.monotonic() + 5
        while not held(observer, key) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert held(observer, key)
    raw.execute("SELECT pg_advisory_unlock(%s)", [key])


def test_results_and_a_failing_statement_read_back_in_order() -> None:
    first, second = dialect.execute([("SELECT %s::int", [1]), ("SELECT %s::text", ["two"])])
    assert (first, second) == ([(1,)], [("two",)])
    with pytest.raises(Exception, match="division by zero"):
        dialect.execute([("SELECT %s::int", [1]), ("SELECT 1 / %s::int", [0])])
    assert dialect.execute([("SELECT %s::int", [3])]) == [[(3,)]]  # the connection goes on


def test_the_store_sends_its_statements_together(monkeypatch: pytest.MonkeyPatch) -> None:
    entered: list[object] = []

    @contextmanager
    def spy(pipeline: object) -> Iterator[None]:
        entered.append(pipeline)
        with sent_together(pipeline):
            yield

    monkeypatch.setattr(dialect, "sent_together", spy)
    assert dialect.execute([("SELECT %s::int", [5])]) == [[(5,)]]
    assert len(entered) == 1 and isinstance(entered[0], psycopg.Pipeline)
