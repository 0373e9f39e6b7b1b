"""`manage.py bench soak --minutes 3` as CI runs it: three minutes of the mixed load on its
own prefork -c 2 worker, real Redis and PostgreSQL, a row of the table every minute.

Nothing here asserts on time or on the figures' size: every run started must finish, nothing
may fail, and each row must carry every gauge the bench promises. Whether memory grew or the
p99 drifted past the targets is the bench's own verdict (`within_targets`), read on a quiet
machine, not on a shared CI host.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
from django.conf import settings

from bench.workers import ROOT, database_url
from runtime.models import Run

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.redis_transport]

KINDS = {"sequential", "fanout", "io_fanout", "callback", "signal", "task", "agent"}
GAUGES = {"rss_mib", "db_connections", "redis_used_mib", "queue_depth", "history_mib"}


def soak(*args: str) -> tuple[dict[str, Any], str]:
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
    }
    done = subprocess.run(
        [sys.executable, "manage.py", "bench", "soak", *args, "--json"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report, done.stderr


def test_bench_soak_three_minutes_loses_no_run_and_meets_no_error() -> None:
    report, table = soak("--minutes", "3", "--every-seconds", "60")

    assert (report["runs_lost"], report["errors"]) == (0, 0), report["error_samples"]
    assert report["runs_completed"] == report["runs_started"] > 0
    assert set(report["runs_started_by_kind"]) == KINDS
    intervals = report["intervals"]
    assert len(intervals) == 3 and len(table.splitlines()) >= 4  # heading and a row each
    for row in intervals:
        assert set(row) >= GAUGES
        assert len(row["rss_mib"]) == 3  # the worker's main process and its two pool processes
        assert row["db_connections"] > 0 and row["history_mib"] > 0
        assert row["queue_depth"] is not None and row["redis_used_mib"] is not None
        assert row["runs_finished"] > 0 and row["steps_per_s"] > 0
        assert row["step_p99_ms"] >= row["step_p50_ms"] >= 0 and row["step_p99_ms"] > 0
    assert isinstance(report["rss_growth_percent"], float)
    assert isinstance(report["p99_step_drift_percent"], float)
    assert isinstance(report["within_targets"], bool)
    # The retention purge ran (a pass a minute) and deleted runs finished past their 60 s.
    assert report["purge_passes"] >= 2 and report["runs_purged"] > 0
    # The Django task runs the bench counted, and the soak's finished runs, are gone.
    assert not Run.objects.filter(workflow="fanfold.django_task").exists()
    assert not Run.objects.filter(workflow__startswith="bench.soak.").exists()


def test_bench_soak_refuses_a_non_positive_length() -> None:
    env = {**os.environ, "DATABASE_URL": database_url()}
    done = subprocess.run(
        [sys.executable, "manage.py", "bench", "soak", "--minutes", "0"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode != 0 and "--minutes must be positive" in done.stderr
