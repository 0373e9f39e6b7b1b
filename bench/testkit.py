"""`bench testkit`: the test kit's time skipping, timed on SQLite and on PostgreSQL.

The workflow (bench.testkit_workflows) covers 30 days of `ctx.sleep`, five failed attempts
an hour apart and a callback that times out after seven days: 37 days and 5 hours of virtual
time. Each database is measured in a process of its own (`bench testkit --here` on its
`DATABASE_URL`): a fresh SQLite file, and the PostgreSQL database of `DATABASE_URL` when it
names one. A round is one `WorkflowEnvironment`: `run_seconds` is `env.run(...)` alone,
`env_seconds` the environment's entry and exit too, `cpu_seconds` the process's CPU time
during `env.run` (on a loaded machine wall time is a multiple of it).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.testkit_workflows import DAYS, FAILURES, month
from runtime.testing import WorkflowEnvironment

ROOT = Path(__file__).resolve().parents[1]
LIMITS = {"sqlite": 0.5, "postgresql": 1.0}  # seconds of wall time, issue 50's bar


def measure_here(rounds: int) -> dict[str, Any]:
    """Run the workflow under `rounds` fresh environments on this process's database (one
    more first, to warm imports and connections, not counted)."""
    runs, cpus, envs = [], [], []
    result: dict[str, Any] = {}
    for round_ in range(rounds + 1):
        began = time.perf_counter()
        with WorkflowEnvironment() as env:
            started, cpu = time.perf_counter(), time.process_time()
            result = env.run(month)
            ran, cpu = time.perf_counter() - started, time.process_time() - cpu
        if round_:
            runs.append(ran)
            cpus.append(cpu)
            envs.append(time.perf_counter() - began)
    expected = {"attempts": FAILURES + 1, "timed_out": True}
    if {k: result[k] for k in expected} != expected:
        raise RuntimeError(f"the workflow ended unexpectedly: {result}")
    return {
        "rounds": rounds,
        "run_seconds_median": round(statistics.median(runs), 4),
        "run_seconds_min": round(min(runs), 4),
        "env_seconds_median": round(statistics.median(envs), 4),
        # This process's CPU time (all its threads): what the run costs here whatever else
        # the machine runs; the database server's time (PostgreSQL) is not in it.
        "cpu_seconds_median": round(statistics.median(cpus), 4),
        "virtual_days": round(result["virtual_seconds"] / 86400, 4),
    }


def run_testkit(rounds: int, timeout: float) -> dict[str, Any]:
    """Measure on SQLite and, when DATABASE_URL names one, PostgreSQL; the report."""
    url = os.environ.get("DATABASE_URL", "")
    report: dict[str, Any] = {
        "workflow": f"{DAYS} x 1 day ctx.sleep, {FAILURES} failures 1 h apart, "
        "a callback timing out after 7 days",
        "limits_seconds": LIMITS,
    }
    with tempfile.TemporaryDirectory() as folder:
        report["sqlite"] = _in_process_of_its_own(
            f"sqlite:///{Path(folder) / 'testkit.sqlite3'}", rounds, timeout
        )
    report["postgresql"] = (
        _in_process_of_its_own(url, rounds, timeout) if url.startswith("postgres") else None
    )
    for name, limit in LIMITS.items():
        figures = report[name]
        if figures is not None:
            figures["within_limit"] = figures["run_seconds_median"] <= limit
    return report


def _in_process_of_its_own(database_url: str, rounds: int, timeout: float) -> dict[str, Any]:
    env = {**os.environ, "DATABASE_URL": database_url}
    command = [sys.executable, "manage.py", "bench", "testkit", "--here", "--json"]
    done = subprocess.run(
        [*command, "--rounds", str(rounds)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"bench testkit --here failed:\n{done.stderr[-3000:]}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures
