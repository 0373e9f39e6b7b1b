"""`bench seq --vs-dbos`: one run of N no-op steps on Fanfold's workers against the same
workflow on DBOS (bench.dbos_seq), in alternating pairs on the same PostgreSQL server.

Fanfold's side is `bench seq`'s: a prefork worker (-c 2 by default) executes the run and its
rate is from the run's own timestamps. DBOS's side runs in a process of its own, in the
workflow's caller, as DBOS does; its system database is `<database>_dbos`, made when missing
and dropped at the end. The ratio is each pair's Fanfold rate over DBOS's; the target is 4x.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from typing import Any

from django.db import connection

from bench import environment
from bench.environment import Pool
from bench.sequential import noop_run_rate, warm_up
from bench.workers import ROOT

TARGET = 4.0


def _dbos_database() -> tuple[str, str]:
    """The DBOS system database's name and URL, beside the benchmark's database."""
    params = connection.settings_dict
    name = f"{params['NAME']}_dbos"
    user = params.get("USER") or "postgres"
    password = f":{params['PASSWORD']}" if params.get("PASSWORD") else ""
    host, port = params.get("HOST") or "127.0.0.1", params.get("PORT") or 5432
    return name, f"postgresql://{user}{password}@{host}:{port}/{name}"


def _dbos_rates(steps: int, rounds: int, url: str, timeout: float) -> list[float]:
    done = subprocess.run(
        [sys.executable, "-m", "bench.dbos_seq", str(steps), str(rounds), url],
        cwd=ROOT, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"DBOS's side failed: {done.stderr[-2000:]}")
    rates: list[float] = json.loads(done.stdout.strip().splitlines()[-1])
    return rates


def _drop(name: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def run_seq_vs_dbos(steps: int, pairs: int, timeout: float, pool: Pool) -> dict[str, Any]:
    """`pairs` pairs of one Fanfold run and one DBOS workflow of `steps` no-op steps."""
    if connection.vendor != "postgresql":
        raise RuntimeError("bench seq --vs-dbos runs on PostgreSQL (DBOS's system database)")
    name, url = _dbos_database()
    ours: list[float] = []
    theirs: list[float] = []
    try:
        with environment.workers(pool):
            warm_up(timeout)
            for _ in range(pairs):
                ours.append(noop_run_rate(steps, timeout))
                theirs.extend(_dbos_rates(steps, 1, url, timeout))
    finally:
        _drop(name)
    ratios = [round(a / b, 3) for a, b in zip(ours, theirs, strict=True)]
    median_ratio = statistics.median(ratios)
    return {
        "scenario": "seq vs DBOS",
        **environment.describe(),
        **pool.describe(),
        "steps": steps,
        "pairs": pairs,
        "fanfold_steps_per_second": ours,
        "dbos_steps_per_second": theirs,
        "ratios": ratios,
        "median_ratio": median_ratio,
        "target_ratio": TARGET,
        "within_target": median_ratio >= TARGET,
    }
