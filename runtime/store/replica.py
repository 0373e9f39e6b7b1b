"""Reads that may lag, served by a streaming replica (FANFOLD_READ_DATABASE, docs/deploying.md).

`lagging_reads()` brackets what may be a little behind: the lists and pages of the API, the
admin, the CLI and MCP, and the metrics gauges. Inside it `ReadReplicaRouter` (listed in
DATABASE_ROUTERS) sends the runtime's reads to the replica's alias; writes, and everything
outside such a block (replay, claims, checkpoints, sweeps, leases, schedules), stay on the
primary. The block falls back to the primary, for its whole length, when:

- the replica is down, is not in recovery (a primary), or its replay lag exceeds
  FANFOLD_READ_MAX_LAG (measured here, cached per process for `MEASURE_EVERY` seconds, or
  `MEASURE_DOWN_EVERY` while it does not answer), which is logged once when it starts and
  once when it ends;
- `fresh_as` (a run read from the primary) is given and the replica's copy of that run is
  missing or older (its `updated_at` or last event seq differs): a client that has just
  started or changed a run reads it, its steps and history as it left them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections
from prometheus_client.core import GaugeMetricFamily, Metric

from runtime import conf
from runtime.models import Run
from runtime.observe.web import read_gauges_with

MEASURE_EVERY = 1.0
# A replica that did not answer (or is no replica) is asked again less often: a connect that
# times out holds up the requests of its process meanwhile.
MEASURE_DOWN_EVERY = 5.0

log = logging.getLogger("fanfold.replica")

_reading_from: ContextVar[str | None] = ContextVar("fanfold_reading_from", default=None)

# Caught up when the replica has replayed the primary's WAL position read just before; else
# behind by the time since the last transaction it replayed was committed on the primary.
_PRIMARY_POSITION = "SELECT pg_current_wal_lsn()::text"
_REPLICA_POSITION = """
    SELECT pg_is_in_recovery(),
           COALESCE(pg_last_wal_replay_lsn() >= %s::pg_lsn, false),
           EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp())
"""


@dataclass(frozen=True)
class ReplicaState:
    """What the last measurement found: `problem` is None when reads may go to the replica."""

    alias: str
    lag: float | None  # seconds behind the primary; None when it could not be measured
    problem: str | None


def in_recovery(alias: str) -> bool:
    """Whether the database of `alias` is a standby (`pg_is_in_recovery()`); raises
    DatabaseError when it cannot be reached."""
    with connections[alias].cursor() as cursor:
        cursor.execute("SELECT pg_is_in_recovery()")
        row = cursor.fetchone()
    return bool(row and row[0])


def measure(alias: str) -> ReplicaState:
    """The replica's state now: reachable, in recovery, and its replay lag in seconds."""
    max_lag = conf.get().READ_MAX_LAG
    try:
        with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
            cursor.execute(_PRIMARY_POSITION)
            primary_at = cursor.fetchone()[0]
        with connections[alias].cursor() as cursor:
            cursor.execute(_REPLICA_POSITION, [primary_at])
            recovering, caught_up, since_replay = cursor.fetchone()
    except DatabaseError as exc:
        connections[alias].close()  # the next measurement connects afresh
        return ReplicaState(alias, None, f"unreachable ({str(exc).strip()[:200]})")
    if not recovering:
        return ReplicaState(alias, None, "not a replica: pg_is_in_recovery() is false")
    if not caught_up and since_replay is None:
        return ReplicaState(alias, None, "behind, and has replayed no transaction yet")
    lag = 0.0 if caught_up else max(float(since_replay), 0.0)
    if lag > max_lag:
        return ReplicaState(alias, lag, f"{lag:.1f} s behind (FANFOLD_READ_MAX_LAG {max_lag} s)")
    return ReplicaState(alias, lag, None)


class _Measured:
    """The last measurement of this process, renewed when older than MEASURE_EVERY."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state: ReplicaState | None = None
        self._at = 0.0

    def get(self, alias: str) -> ReplicaState:
        with self._lock:
            state = self._state
            every = MEASURE_DOWN_EVERY if state and state.lag is None else MEASURE_EVERY
            if state is None or state.alias != alias or time.monotonic() - self._at > every:
                state = measure(alias)
                _report_change(self._state, state)
                self._state, self._at = state, time.monotonic()
            return state

    def expire(self) -> None:
        with self._lock:
            self._at = float("-inf")  # the state stays, to report only a change


_measured = _Measured()


def _report_change(before: ReplicaState | None, now: ReplicaState) -> None:
    was = before.problem if before is not None and before.alias == now.alias else None
    if now.problem and not was:
        log.warning("read replica %r skipped, reads go to the primary: %s", now.alias, now.problem)
    elif was and not now.problem:
        log.warning("read replica %r serves reads again (%.1f s behind)", now.alias, now.lag)


def replica_state() -> ReplicaState | None:
    """The configured read replica's state (measured at most once a second), or None when
    FANFOLD_READ_DATABASE is not set."""
    alias = conf.get().READ_DATABASE
    return _measured.get(alias) if alias else None


def forget_measurement() -> None:
    """Measure afresh on next use (tests that stop or delay the replica)."""
    _measured.expire()


def _has_run_as(alias: str, run: Run) -> bool:
    copy = Run.objects.using(alias).filter(id=run.id, updated_at=run.updated_at)
    try:
        return copy.filter(last_seq=run.last_seq).exists()
    except DatabaseError:
        connections[alias].close()
        return False


def reads_alias(fresh_as: Run | None = None) -> str | None:
    """The replica's alias if reads may go there now (see the module's docstring), else None."""
    state = replica_state()
    if state is None or state.problem is not None:
        return None
    if fresh_as is not None and not _has_run_as(state.alias, fresh_as):
        return None
    return state.alias


@contextmanager
def lagging_reads(fresh_as: Run | None = None) -> Iterator[str]:
    """Send the runtime's reads in the block to the read replica when it may serve them;
    yields the alias they go to (the primary's, "default", when it may not)."""
    alias = reads_alias(fresh_as)
    token = _reading_from.set(alias)
    try:
        yield alias or DEFAULT_DB_ALIAS
    finally:
        _reading_from.reset(token)


class ReplicaCollector:
    """The read replica's gauges at scrape time: whether it serves reads, and its lag."""

    def collect(self) -> Iterator[Metric]:
        state = replica_state()
        if state is None:
            return
        yield GaugeMetricFamily(
            "fanfold_read_replica_serving",
            "1 while the read replica serves reads that may lag, 0 while they go to the primary.",
            value=0 if state.problem else 1,
        )
        if state.lag is not None:
            yield GaugeMetricFamily(
                "fanfold_read_replica_lag_seconds",
                "How far the read replica's replay is behind the primary, in seconds.",
                value=state.lag,
            )


read_gauges_with(lagging_reads, ReplicaCollector())


def _read_alias() -> str:
    """The replica's alias ("" if none) for the router, which Django also asks while it runs
    the system checks: with a bad FANFOLD value elsewhere, the raw setting, so that the check
    reports that value (fanfold.E001) instead of the router raising it."""
    try:
        return conf.get().READ_DATABASE
    except conf.SettingsError:
        raw = getattr(settings, "FANFOLD", {}).get("READ_DATABASE", "")
        return raw if isinstance(raw, str) else ""


class ReadReplicaRouter:
    """Django database router: inside `lagging_reads()` the runtime's models are read from
    the replica; writes always go to the primary, even of a row read from the replica."""

    def db_for_read(self, model: type[Any], **hints: Any) -> str | None:
        alias = _reading_from.get()
        if alias is not None and model._meta.app_label == "runtime":
            return alias
        return None

    def db_for_write(self, model: type[Any], **hints: Any) -> str | None:
        instance = hints.get("instance")
        read_alias = _read_alias()
        if instance is not None and read_alias and instance._state.db == read_alias:
            return DEFAULT_DB_ALIAS
        return None

    def allow_relation(self, first: Any, second: Any, **hints: Any) -> bool | None:
        same_data = {DEFAULT_DB_ALIAS, _read_alias()}
        return True if {first._state.db, second._state.db} <= same_data else None

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool | None:
        return False if db == _read_alias() else None
