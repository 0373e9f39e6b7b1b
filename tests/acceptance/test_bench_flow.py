"""`manage.py bench flow` as a user runs it: the same loop with limits off and on.

Small sizes; nothing asserts on time, only that every figure the scenario promises is there.
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

pytestmark = pytest.mark.django_db(transaction=True)


def test_bench_flow_reports_admission_and_rate_limit_overhead(counters_redis: Any) -> None:
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
    }
    args = ["flow", "--runs", "4", "--steps", "3", "--repeat", "1", "--json"]
    done = subprocess.run(
        [sys.executable, "manage.py", "bench", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert (report["scenario"], report["runs"], report["steps_per_run"]) == ("flow", 4, 3)
    for name in ("plain", "admitted", "paced", "fanned", "paced_fan"):
        assert report[f"{name}_seconds"] > 0
    assert isinstance(report["admission_overhead_ms_per_run"], float)
    assert isinstance(report["rate_limit_overhead_ms_per_step"], float)
    assert isinstance(report["rate_limit_overhead_ms_per_branch"], float)
    assert report["start_ms"]["admitted"] > 0 and report["turn_ms"] > 0
    admitted = Run.objects.filter(workflow="bench.flow.admitted")
    assert admitted.count() == 4 + 50 and not admitted.filter(admitted=False).exists()
