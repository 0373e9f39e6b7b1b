"""The primary stopped (immediate shutdown) under running workflows, its streaming standby
promoted: libpq's multi-host failover (DATABASE_URL lists both, target_session_attrs=read-write)
takes every connection to the new primary, the prefork workers' and their background loops'
alike, and the runs complete.

The pair is the test's own (scripts/pg-failover; FAULT_FAILOVER_PORTS names its two ports and
a spare one), and the whole test session runs on it: scripts/test runs this file in a pytest
of its own.

Under synchronous replication, on both brokers, the bodies are held while the fault lands,
once every body that ran has its completion committed: then no body may run again. In full
flow, under either replication, the test measures what the standby lacked: the completions
the crashed primary had committed (its data directory started alone on the spare port) less
those the standby held at the promotion, and the bodies that ran again."""

from __future__ import annotations

import os
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import psycopg
import pytest
from django.db import connection

from runtime import RunHandle, start
from runtime.models import Step
from runtime.testing import InMemoryDispatcher, use_dispatcher
from tests.faults import failover_workflows as fails
from tests.faults import fault_workflows as flows
from tests.faults.fault_checks import assert_each_step_completed_once, wait_for
from tests.support.workers import running_worker

SCRIPT = str(Path(__file__).resolve().parents[2] / "scripts" / "pg-failover")
ENV = {"FANFOLD_WORKFLOW_MODULES": fails.MODULE}
# Steps of the sequential run; the primary fails after 1,000 of them. The 20,000
# (FAULT_FAILOVER_STEPS=20000) take half a minute more a case and meet no other code: after
# the first steps on the new primary, the rest run as any others.
SEQUENCE = int(os.environ.get("FAULT_FAILOVER_STEPS", "3000"))
BRANCHES = 1000  # branches of the fan-out
CONCURRENCY = 4  # each worker's prefork processes


def _ports() -> list[str]:
    """The pair's two ports (FAULT_FAILOVER_PORTS: "PRIMARY STANDBY SPARE")."""
    return os.environ.get("FAULT_FAILOVER_PORTS", "").split()[:2]


def _spare_port() -> str:
    """Where the crashed primary's data directory is read, alone (the third port)."""
    named = os.environ.get("FAULT_FAILOVER_PORTS", "").split()
    if len(named) < 3:
        _missing("FAULT_FAILOVER_PORTS names no spare port to read the crashed primary on")
    return named[2]


def _missing(message: str) -> NoReturn:
    """Fail under CI, else skip."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def _pair(*args: str) -> str:
    """scripts/pg-failover on the test's pair; what it prints."""
    done = subprocess.run([SCRIPT, *args, *_ports()], check=True, capture_output=True, text=True)
    return done.stdout.strip()


@pytest.fixture
def pair() -> Iterator[Callable[[str], str]]:
    """Resets the pair (a primary, its standby streaming) in a mode; yields the resetter."""
    if len(_ports()) != 2:
        _missing("FAULT_FAILOVER_PORTS names no primary/standby pair (scripts/pg-failover)")

    def reset(mode: str) -> str:
        primary = _pair("reset", mode)
        connection.close()  # a connection to a standby rebuilt under it
        return primary

    yield reset
    connection.close()


_COMPLETED = (
    f"SELECT run_id, position FROM {Step._meta.db_table} "
    f"WHERE name = '{fails.mark.name}' AND status = 'completed'"
)
Marks = set[tuple[str, int]]  # (run id, position) of `mark` steps


def _completed(port: str) -> Marks:
    """The `mark` steps completed on the server at `port`."""
    name = str(connection.settings_dict["NAME"])
    with psycopg.connect(host="127.0.0.1", port=port, user="postgres", dbname=name) as raw:
        return {(str(run), position) for run, position in raw.execute(_COMPLETED).fetchall()}


def _completed_on_the_crashed_primary() -> Marks:
    """What the crashed primary had committed: its data directory read on the spare port."""
    name = str(connection.settings_dict["NAME"])
    rows = _pair("read-old", _spare_port(), name, _COMPLETED).splitlines()
    return {(run, int(position)) for run, position in (row.split("|") for row in rows)}


def _ran(counters: Any) -> Counter[tuple[str, int]]:
    """How many times each `mark` body ran, by the bodies' own records."""
    entries = (entry.decode().split(":") for entry in counters.lrange(fails.RAN, 0, -1))
    return Counter((run, int(position)) for run, position in entries)


def _settled(counters: Any, primary: str) -> bool:
    """Every body that ran has its completion committed, and none is running: the bodies are
    held before they begin."""
    before = len(_ran(counters))
    time.sleep(0.2)
    ran = _ran(counters)
    return len(ran) == before and set(ran) == _completed(primary)


def _broker(name: str, amqp_url: str) -> dict[str, str]:
    return {"CELERY_BROKER_URL": amqp_url} if name == "rabbitmq" else {}


CASES = [(fails.sequence, SEQUENCE, 1000), (fails.fanout, BRANCHES, 300)]


@pytest.mark.parametrize("broker", ["redis", "rabbitmq"])
@pytest.mark.parametrize(("workflow", "arg", "at"), CASES, ids=["sequence", "fanout"])
def test_fault_failover_sync_no_completed_step_runs_again(
    pair: Callable[[str], str],
    counters_redis: Any,
    request: pytest.FixtureRequest,
    broker: str,
    workflow: Any,
    arg: int,
    at: int,
) -> None:
    primary = pair("sync")
    amqp = request.getfixturevalue("amqp_url") if broker == "rabbitmq" else ""
    env = {**ENV, **_broker(broker, amqp)}
    with running_worker(f"failover-{broker}", "prefork", CONCURRENCY, **env):
        with use_dispatcher(InMemoryDispatcher()):  # a worker's sweep sends the start
            handle = start(workflow, arg)
        wait_for(lambda: len(_ran(counters_redis)) >= at, 120, "the run to get going")
        counters_redis.set(flows.HOLD, 1)
        try:
            wait_for(lambda: _settled(counters_redis, primary), 60, "bodies to settle")
            before = _ran(counters_redis)
            _pair("crash")
            standby = _other(primary)
            held = _completed(standby)
            promoted_at = time.monotonic()
            _pair("promote")
            connection.close()
        finally:
            counters_redis.delete(flows.HOLD)
        finished = _finish(handle, counters_redis, len(before), promoted_at)
    ran = _ran(counters_redis)
    print(
        f"\nfailover (sync, {broker}) mid {workflow.name}: {len(before)} bodies before; {finished}"
    )
    assert handle.result == sum(range(arg))
    assert set(before) <= held  # every completion acknowledged before the crash survived it
    assert [mark for mark, n in ran.items() if n > 1] == []  # no body ran twice
    assert len(ran) == arg
    assert_each_step_completed_once(handle.id)
    assert counters_redis.lrange(flows.CHARGES, 0, -1) == [workflow.name.split(".")[-1].encode()]


def _other(port: str) -> str:
    first, second = _ports()
    return second if port == first else first


def _finish(handle: RunHandle, counters: Any, before: int, promoted_at: float) -> str:
    """Wait for a body begun after the promotion, then for the run; how long each took."""
    recovered = wait_for(lambda: len(_ran(counters)) > before, 120, "the run to go on")
    handle.wait(timeout=300)
    done = time.monotonic() - promoted_at
    return f"a body ran {recovered:.2f} s after the promotion, the run finished after {done:.1f} s"


# Each trial's pause of the primary's WAL sender before the crash, in seconds: none (the
# standby as far behind as it happens to be), or a standby held that far behind.
LAGS = {"async": [0.0, 0.0, 0.3], "sync": [0.0]}
FLOW = {"sequence": 1500, "fanout": 600}  # the runs of a trial; the crash lands at 400 bodies


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_fault_failover_window_in_full_flow(
    pair: Callable[[str], str], counters_redis: Any, mode: str
) -> None:
    """The primary stopped in full flow, a sequential run and a fan-out side by side: what the
    standby held at the promotion never runs again, and each completion it lacked ran again;
    under synchronous replication the crashed primary committed no more than the commits in
    flight (each prefork process has at most one), and under asynchronous replication the
    test measures how many more, over a few trials (docs/operating.md, "Failover")."""
    _spare_port()  # skips without one
    figures = []
    with running_worker(f"failover-{mode}", "prefork", CONCURRENCY, **ENV):
        for lag in LAGS[mode]:
            held, lost, again = _trial_in_full_flow(pair, counters_redis, mode, lag)
            figures.append(
                f"{'no pause' if not lag else f'sender paused {lag} s'}: the standby held "
                f"{held} completions, the crashed primary {len(lost)} more; "
                f"{len(again)} bodies ran again, {len(again & lost)} of them of those"
            )
            assert lost <= again  # a completion the standby lacked: its body ran again
            if mode == "sync":
                assert len(lost) <= CONCURRENCY  # only commits in flight, not acknowledged
    print(f"\nfailover ({mode} replication) in full flow: " + "; ".join(figures))


def _trial_in_full_flow(
    pair: Callable[[str], str], counters: Any, mode: str, lag: float
) -> tuple[int, Marks, Marks]:
    """One crash: the number of completions the standby held; the completions it lacked that
    the crashed primary had committed; the bodies that ran more than once."""
    counters.delete(fails.RAN)
    primary = pair(mode)
    runs = [start(fails.sequence, FLOW["sequence"]), start(fails.fanout, FLOW["fanout"])]
    wait_for(lambda: len(_ran(counters)) >= 400, 120, "the runs to get going")
    _pair("crash", *([str(lag)] if lag else []))
    ours = {str(handle.id) for handle in runs}
    held = {mark for mark in _completed(_other(primary)) if mark[0] in ours}
    _pair("promote")
    connection.close()
    committed = {mark for mark in _completed_on_the_crashed_primary() if mark[0] in ours}
    for handle in runs:
        handle.wait(timeout=300)
    again = {mark for mark, n in _ran(counters).items() if n > 1}
    assert held <= committed
    assert again.isdisjoint(held)  # what the promoted standby held never ran again
    for handle, arg in zip(runs, FLOW.values(), strict=True):
        assert handle.result == sum(range(arg))
        assert_each_step_completed_once(handle.id)
    return len(held), committed - held, again
