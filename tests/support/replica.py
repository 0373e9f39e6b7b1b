"""The test cluster's streaming replica (scripts/pg-replica, 127.0.0.1:5435): delayed, stopped
and caught up by the read replica tests, which run in scripts/test's serial pass (they change
what every reader of the replica sees)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

from tests.support.services import require
from tests.support.waiting import wait_until

PORT = int(os.environ.get("TEST_REPLICA_PORT", "5435"))
REPLICA = ("127.0.0.1", PORT)
PRIMARY = ("127.0.0.1", 5432)
SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "pg-replica"


def require_replica() -> None:
    """Fail (CI) or skip (local) when the replica does not answer."""
    require(REPLICA, f"the read replica (scripts/pg-replica start {PORT})")


def _sql(address: tuple[str, int], statement: str) -> object:
    host, port = address
    with psycopg.connect(host=host, port=port, user="postgres", dbname="postgres",
                         autocommit=True, connect_timeout=5) as conn:  # fmt: skip
        cursor = conn.execute(statement)
        row = cursor.fetchone() if cursor.description else None
    return row[0] if row else None


def caught_up() -> bool:
    """Whether the replica has replayed all the WAL the primary had written a moment ago."""
    at = _sql(PRIMARY, "SELECT pg_current_wal_lsn()::text")
    return bool(_sql(REPLICA, f"SELECT pg_last_wal_replay_lsn() >= '{at}'::pg_lsn"))


def wait_caught_up() -> None:
    """Commit on the primary, and wait until the replica has replayed it (its last replayed
    commit, from which its lag is measured, is then a recent one)."""
    _sql(PRIMARY, "SELECT txid_current()")
    wait_until(caught_up, timeout=30, interval=0.05, message="the replica to catch up")


def _apply_delay(setting: str) -> None:
    _sql(REPLICA, f"ALTER SYSTEM SET recovery_min_apply_delay = '{setting}'")
    _sql(REPLICA, "SELECT pg_reload_conf()")
    wait_until(
        lambda: _sql(REPLICA, "SHOW recovery_min_apply_delay") == setting,
        message=f"recovery_min_apply_delay {setting}",
    )


@contextmanager
def delayed(seconds: int) -> Iterator[None]:
    """The replica applies each commit `seconds` after the primary made it (the block's own
    writes reach it late); caught up again after the block."""
    wait_caught_up()
    _apply_delay(f"{seconds}s")
    try:
        yield
    finally:
        _apply_delay("0")
        wait_caught_up()


@contextmanager
def stopped() -> Iterator[None]:
    """The replica's server stopped for the block, started and streaming again after it."""
    subprocess.run([str(SCRIPT), "stop", str(PORT)], check=True, timeout=120)
    try:
        yield
    finally:
        subprocess.run([str(SCRIPT), "start", str(PORT)], check=True, timeout=300)
        wait_caught_up()
