"""`bench versions`: what deployment versions cost (docs/deploying.md#deployment-versions).

`seq`: what pinning costs a step. In the same worker processes, runs of `examples.noop_loop`
alternate between unpinned (version "": the plain queue and the path of the code before
versions) and pinned to the workers' version (its queue variant, the version remembered at the
claim); each side's steps per second, their medians and the ratio pinned / unpinned.

`upgrade`: `fanfold versions upgrade FROM --dry-run` over many in-flight runs. One real run is
recorded in this process, copied into `runs` running runs of a version of their own (bench
replay's seeding), and `upgrade(FROM, dry_run=True)` replays them all; the copies are deleted.
"""

from __future__ import annotations

import statistics
import time
import uuid
from typing import Any

from django.conf import settings
from django.test.utils import override_settings

from bench import environment
from bench.environment import Pool
from bench.replaycheck import drop_seeded, recorded_run, seed_runs
from bench.sequential import run_seconds, warm_up
from runtime.deploy.upgrades import upgrade
from runtime.handles import RunHandle
from runtime.models import RunStatus
from runtime.services import start_run

SIDES = ("unpinned", "pinned")


def run_versions_seq(steps: int, pairs: int, timeout: float, pool: Pool) -> dict[str, Any]:
    """`pairs` pairs of one-run `bench seq`, unpinned and pinned, in alternating order."""
    version = f"bench-{uuid.uuid4().hex[:8]}"
    pinned = override_settings(FANFOLD={**settings.FANFOLD, "APP_VERSION": version})
    rates: dict[str, list[float]] = {side: [] for side in SIDES}
    with pinned, environment.workers(pool, FANFOLD_APP_VERSION=version):
        warm_up(timeout)
        for pair in range(pairs):
            for side in SIDES if pair % 2 == 0 else SIDES[::-1]:
                run, _ = start_run("examples.noop_loop", [steps], app_version=_of(side, version))
                handle: RunHandle[Any] = RunHandle(run.id)
                handle.wait(timeout=timeout)
                rates[side].append(round(steps / run_seconds([handle]), 1))
    medians = {side: statistics.median(rates[side]) for side in SIDES}
    return {
        "scenario": "versions seq",
        **environment.describe(),
        **pool.describe(),
        "steps": steps,
        "pairs": pairs,
        "steps_per_second": rates,
        "median_steps_per_second": medians,
        "ratio_pinned_to_unpinned": round(medians["pinned"] / medians["unpinned"], 3),
    }


def _of(side: str, version: str) -> str:
    return version if side == "pinned" else ""


def run_versions_upgrade(runs: int, steps: int, timeout: float) -> dict[str, Any]:
    """Seed `runs` running runs of `steps` recorded steps on a version of their own and time a
    dry-run upgrade of that version to this process's."""
    template = recorded_run(steps, timeout)
    old = f"bench-old-{uuid.uuid4().hex[:8]}"
    seed_started = time.perf_counter()
    ids = seed_runs(template, runs, status=RunStatus.RUNNING, app_version=old)
    seeded = time.perf_counter() - seed_started
    try:
        started = time.perf_counter()
        result = upgrade(old, dry_run=True)
        seconds = time.perf_counter() - started
    finally:
        drop_seeded(ids, template)
    return {
        "scenario": "versions upgrade --dry-run",
        **environment.describe(),
        "runs": runs,
        "steps_per_run": steps,
        "checked": result.checked,
        "would_move": len(result.moved),
        "refused": len(result.refused),
        "seed_seconds": round(seeded, 3),
        "seconds": round(seconds, 3),
        "runs_per_second": round(result.checked / seconds, 1) if seconds else None,
    }
