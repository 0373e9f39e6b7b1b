"""A rolling deploy with real workers: runs pinned to the code that started them.

Two releases of one workflow name live in two module files on two PYTHONPATHs, each worker
with its FANFOLD_APP_VERSION. Runs started on v1 sleep across the switch: while v2 serves
alone they wait (stranded, reported) and no v2 body runs for them, counted through the step
bodies' own records in Redis; `upgrade` then moves the runs whose histories replay clean on
v2's code (this process imports v2) and refuses the one whose code changed.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runtime.deploy.upgrades import upgrade
from runtime.models import Run
from runtime.observe.versions import version_rows
from runtime.services import start_run
from tests.acceptance.deploy_releases import Releases, records
from tests.support.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

MODULE = "deploy_release_flows"
WORKFLOW = "tests.deploy.order"
BODIES = "tests:deploy:bodies"
SLEEP = 6.0

# {release}: the code's release, written by each step body into the Redis list. v2 renames
# the first step of the runs labelled "strict": their v1 histories no longer replay.
SOURCE = """
from typing import Any

from runtime import step, workflow
from tests.support.services import counters_redis_client

RELEASE = "{release}"


@step(name="tests.deploy.mark")
def mark(label: str, part: str) -> str:
    counters_redis_client().rpush("{bodies}", f"{{RELEASE}}:{{label}}:{{part}}")
    return part


@workflow(name="{workflow}")
def order(ctx: Any, label: str) -> list[str]:
    first = "a-new" if RELEASE == "v2" and label.startswith("strict") else "a"
    out = [ctx.step(mark, label, "a", name=first)]
    ctx.sleep({sleep})
    out.append(ctx.step(mark, label, "b", name="b"))
    return out
"""


@pytest.fixture
def releases(tmp_path: Path) -> Iterator[Releases]:
    """The two releases' folders; this process imports v2's module (its replay check's code)."""
    found = Releases(tmp_path, MODULE, SOURCE, bodies=BODIES, workflow=WORKFLOW, sleep=SLEEP)
    with found.imported("v2"):
        yield found


def _worker(releases: Releases, release: str, version: str) -> Any:
    return releases.worker(version, release, version, FANFOLD_LEASE_SECONDS="2")


def _bodies(client: Any) -> list[str]:
    return records(client, BODIES)


def test_deploy_v1_runs_never_run_on_v2_and_clean_ones_upgrade(
    counters_redis: Any, releases: Releases, settings: Any
) -> None:
    tag = uuid.uuid4().hex[:6]  # versions of their own: no queue of an earlier test is reused
    v1, v2 = f"v1-{tag}", f"v2-{tag}"
    settings.FANFOLD = {**settings.FANFOLD, "VERSION_STRANDED_AFTER": "1"}
    labels = ["r1", "r2", "strict"]
    with _worker(releases, "v2", v2):
        with _worker(releases, "v1", v1):
            runs = {label: start_run(WORKFLOW, [label], app_version=v1)[0] for label in labels}
            wait_until(
                lambda: {_status(run) for run in runs.values()} == {"waiting"},
                60,
                message="the v1 runs to sleep after their first step",
            )
        due = time.monotonic() + SLEEP + 2
        # v1 stopped while its runs sleep: with v2 alone, they wait for v1's code.
        fresh, _ = start_run(WORKFLOW, ["fresh"], app_version=v2)
        wait_until(lambda: _status(fresh) == "completed", 60, message="the v2 run to finish")
        wait_until(lambda: _stranded(v1) == 3, 30, message=f"{v1}'s runs to be reported stranded")
        time.sleep(max(due - time.monotonic(), 0))  # their timers are due: v2 leaves them
        assert {_status(run) for run in runs.values()} == {"waiting"}
        wrong = [b for b in _bodies(counters_redis) if b.startswith("v2:") and "fresh" not in b]
        assert wrong == []  # 0 v1 runs replayed on v2's code

        result = upgrade(v1, v2)
        assert sorted(map(str, result.moved)) == sorted(str(runs[x].id) for x in ("r1", "r2"))
        assert [r.run_id for r in result.refused] == [runs["strict"].id]
        mismatch = result.refused[0].mismatch
        assert mismatch is not None and (mismatch.position, mismatch.reason) == (1, "name")
        for label in ("r1", "r2"):
            wait_until(
                lambda x=label: _status(runs[x]) == "completed", 60, message=f"{label} to finish"
            )
        assert _status(runs["strict"]) == "waiting"
        assert Run.objects.get(id=runs["strict"].id).app_version == v1

    bodies = _bodies(counters_redis)
    for label in ("r1", "r2"):
        assert [b for b in bodies if f":{label}:" in b] == [f"v1:{label}:a", f"v2:{label}:b"]
    assert [b for b in bodies if ":strict:" in b] == ["v1:strict:a"]
    assert [b for b in bodies if ":fresh:" in b] == ["v2:fresh:a", "v2:fresh:b"]


def _status(run: Run) -> str:
    return str(Run.objects.get(id=run.id).status)


def _stranded(version: str) -> int:
    return next((r["stranded"] for r in version_rows() if r["version"] == version), 0)
