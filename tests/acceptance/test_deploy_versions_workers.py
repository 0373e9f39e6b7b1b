"""Pinned runs under real workers of two releases at once: a v1 run's fan-out branches and
its child run, and a dead v1 worker's run, stay on v1's workers while a v2 worker runs.

Each step body records its release, its worker and what it ran in a Redis list; the counts
come from those records, not from the runtime's own bookkeeping. The v2 worker is not only
left alone by routing: the tests hand it copies of the v1 run's messages on its own queue,
which it must refuse at the claim.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runtime.core.branch_dispatch import BranchDispatch
from runtime.dispatch import CeleryDispatcher
from runtime.models import FanoutGroup, Run
from runtime.services import start_run
from tests.acceptance.deploy_releases import Releases, records
from tests.support.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

MODULE = "deploy_pinned_flows"
PARENT, CHILD, HOLD = "tests.pinned.parent", "tests.pinned.child", "tests.pinned.hold"
BODIES, GATE, TRIES = "tests:pinned:bodies", "tests:pinned:gate", "tests:pinned:tries"

# Every body records "release:worker:label:part". `gated` waits (at most two minutes) for the
# test to open the gate: it keeps a one-process worker busy. `stuck_once` blocks its first
# attempt until its worker is killed.
SOURCE = """
import os
import time
from typing import Any

from runtime import step, workflow
from tests.support.services import counters_redis_client

RELEASE = "{release}"


def _record(label: str, part: str) -> None:
    role = os.environ.get("TEST_WORKER_ROLE", "?")
    counters_redis_client().rpush("{bodies}", f"{{RELEASE}}:{{role}}:{{label}}:{{part}}")


def _wait_for(key: str) -> None:
    deadline = time.monotonic() + 120
    while not counters_redis_client().exists(key) and time.monotonic() < deadline:
        time.sleep(0.05)


@step(name="tests.pinned.mark")
def mark(label: str, part: str) -> str:
    _record(label, part)
    return part


@step(name="tests.pinned.gated")
def gated(label: str, part: str) -> str:
    _record(label, part)
    _wait_for("{gate}")
    return part


@step(name="tests.pinned.stuck_once")
def stuck_once(label: str) -> str:
    # Counted before it is recorded: the test kills the worker once it sees the record, and a
    # kill between the two would leave the next attempt to count itself first, and wait.
    first = counters_redis_client().incr("{tries}") == 1
    _record(label, "stuck")
    if first:
        _wait_for("{gate}")  # killed before the gate opens
    return "through"


@workflow(name="{child}")
def child(ctx: Any, label: str) -> list[str]:
    return [ctx.step(mark, label, "child-a", name="a"), ctx.step(mark, label, "child-b", name="b")]


@workflow(name="{parent}")
def parent(ctx: Any, label: str) -> list[Any]:
    first = ctx.step(mark, label, "start", name="start")
    # The child first: it is started while the worker is still free, then waits its turn.
    return [first, *ctx.all([
        child.s(label), gated.s(label, "branch-0"), mark.s(label, "branch-1"),
        mark.s(label, "branch-2"),
    ])]


@workflow(name="{hold}")
def hold(ctx: Any, label: str) -> list[str]:
    return [ctx.step(stuck_once, label), ctx.step(mark, label, "after", name="after")]
"""


@pytest.fixture
def releases(tmp_path: Path) -> Iterator[Releases]:
    fields = {"bodies": BODIES, "gate": GATE, "tries": TRIES}
    found = Releases(tmp_path, MODULE, SOURCE, parent=PARENT, child=CHILD, hold=HOLD, **fields)
    with found.imported("v1"):
        yield found


def _versions() -> tuple[str, str]:
    tag = uuid.uuid4().hex[:6]  # versions of their own: no queue of an earlier test is reused
    return f"v1-{tag}", f"v2-{tag}"


def _of(client: Any, label: str) -> list[str]:
    """The records of `label`'s bodies, as (release:worker:part)."""
    found = []
    for record in records(client, BODIES):
        release, worker, owner, part = record.split(":")
        if owner == label:
            found.append(f"{release}:{worker}:{part}")
    return found


def _status(run_id: uuid.UUID) -> str:
    return str(Run.objects.get(id=run_id).status)


def _v2_drained(v2: str, label: str) -> None:
    """Wait until the v2 worker (one thread) has taken every message queued before now: it
    runs a v2 run started behind them."""
    marker, _ = start_run(CHILD, [label], app_version=v2)
    wait_until(lambda: _status(marker.id) == "completed", 60, message=f"the {v2} run {label}")


def test_deploy_versions_a_v1_runs_branches_and_child_run_only_on_v1(
    counters_redis: Any, releases: Releases
) -> None:
    v1, v2 = _versions()
    one = {"FANFOLD_BRANCH_CHUNK": "1"}
    v2_worker = releases.worker("v2w", "v2", v2, "threads", 1, **one)
    with v2_worker, releases.worker("v1w", "v1", v1, "threads", 1, **one):
        run, _ = start_run(PARENT, ["p"], app_version=v1)
        held = "v1:v1w:branch-0"
        wait_until(lambda: held in _of(counters_redis, "p"), 60, message="v1 held by branch-0")
        # The child branch has started the child run, which waits behind the held one:
        # copies of every branch attempt and of the child's start go to v2's queue.
        children = Run.objects.filter(workflow=CHILD, app_version=v1)
        wait_until(children.exists, 30, message="the child run")
        child = children.get()
        assert _status(child.id) == "pending"
        group = FanoutGroup.objects.get(run_id=run.id)
        positions = range(group.first_position, group.first_position + group.total)
        to_v2 = CeleryDispatcher(version=lambda _: v2)
        copies = [BranchDispatch(p, 1) for p in positions]
        copies.append(BranchDispatch(group.first_position, 1, poll=1))  # the child's poll
        to_v2.publish_branches(run.id, group.first_position, copies)
        to_v2.enqueue_run(child.id)
        _v2_drained(v2, "drained")
        assert [r for r in _of(counters_redis, "p") if not r.startswith("v1:v1w:")] == []

        counters_redis.set(GATE, 1)
        wait_until(lambda: _status(run.id) == "completed", 90, message="the v1 run to end")

    assert Run.objects.get(id=run.id).result == [
        "start",
        ["child-a", "child-b"],
        "branch-0",
        "branch-1",
        "branch-2",
    ]
    assert Run.objects.get(id=child.id).app_version == v1
    ran = Counter(_of(counters_redis, "p"))
    expected = ["start", "child-a", "child-b", "branch-0", "branch-1", "branch-2"]
    assert ran == Counter(f"v1:v1w:{part}" for part in expected)  # each once, all on v1
    assert _of(counters_redis, "drained") == ["v2:v2w:child-a", "v2:v2w:child-b"]


def test_deploy_versions_a_killed_v1_workers_run_is_taken_over_by_the_other_v1_worker(
    counters_redis: Any, releases: Releases
) -> None:
    v1, v2 = _versions()
    # A long lease: a run finished well within it was taken over through the dead process's
    # liveness lock (runtime.recovery.dead_processes), not by the lease's expiry.
    fast = {"FANFOLD_LEASE_SECONDS": "600", "FANFOLD_LIVENESS_LOCKS": "on"}
    with releases.worker("v2w", "v2", v2, "threads", 2, **fast):
        a_worker, b_worker = (
            releases.worker("v1a", "v1", v1, "prefork", 2, **fast),
            releases.worker("v1b", "v1", v1, "prefork", 2, **fast),
        )
        with a_worker as a, b_worker as b:
            run, _ = start_run(HOLD, ["h"], app_version=v1)
            first = wait_until(lambda: _of(counters_redis, "h"), 60, message="the stuck body")
            holder = first[0].split(":")[1]
            doomed, other = (a, "v1b") if holder == "v1a" else (b, "v1a")
            doomed.kill()
            wait_until(lambda: _status(run.id) == "completed", 120, message="the takeover")

    assert Run.objects.get(id=run.id).result == ["through", "after"]
    assert _of(counters_redis, "h") == [
        f"v1:{holder}:stuck", f"v1:{other}:stuck", f"v1:{other}:after"
    ]  # fmt: skip


TICK, TICKS = "tests.drain.tick", "tests:drain:ticks"
# A scheduled workflow (every second) whose body records its release and run; a module of its
# own, so that the other tests' workers take no ticks.
DRAIN_SOURCE = """
from datetime import timedelta
from typing import Any

from runtime import step, workflow
from tests.support.services import counters_redis_client

RELEASE = "{release}"


@step(name="tests.drain.record")
def record(run_id: str) -> str:
    counters_redis_client().rpush("{ticks}", f"{{RELEASE}}:{{run_id}}")
    return run_id


@workflow(name="{tick}", schedule=timedelta(seconds=1))
def tick(ctx: Any) -> str:
    return ctx.step(record, str(ctx.run_id))
"""


def _ticks(version: str) -> int:
    return Run.objects.filter(workflow=TICK, app_version=version).count()


def test_deploy_versions_schedules_move_to_the_new_version_and_the_old_one_drains(
    counters_redis: Any, tmp_path: Path
) -> None:
    releases = Releases(tmp_path, "deploy_drain_flows", DRAIN_SOURCE, ticks=TICKS, tick=TICK)
    v1, v2 = _versions()
    often = {"FANFOLD_SCHEDULE_INTERVAL": "0.2"}
    with releases.worker("v1d", "v1", v1, "threads", 2, **often):
        wait_until(lambda: _ticks(v1) >= 3, 90, message=f"{v1}'s schedule ticks")
        with releases.worker("v2d", "v2", v2, "threads", 2, **often):
            wait_until(lambda: _ticks(v2) >= 3, 60, message=f"{v2} to take the ticks")
            in_flight = Run.objects.filter(app_version=v1).exclude(status="completed")
            wait_until(lambda: not in_flight.exists(), 60, message=f"{v1} to drain")
            before = _ticks(v1)
            after = _ticks(v2) + 3
            wait_until(lambda: _ticks(v2) >= after, 60, message=f"three more {v2} ticks")
            assert _ticks(v1) == before  # v1's worker, still up, started none of them

    versions = dict(Run.objects.filter(workflow=TICK).values_list("id", "app_version"))
    ran = [record.split(":") for record in records(counters_redis, TICKS)]
    assert ran and all(versions[uuid.UUID(run)].startswith(release) for release, run in ran)
