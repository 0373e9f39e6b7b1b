"""Django tasks on the embedded default: a fresh SQLite database and the in-process Celery
worker of a process of its own (tests/acceptance/tasks_embedded.py). A task enqueued through
the backend completes there, and `get_result` gives back every TaskResult field."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from bench.workers import ROOT

SCRIPT = Path(__file__).with_name("tasks_embedded.py")


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """What the embedded process printed: each task's result, and that process's id."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("FANFOLD_", "DJANGO_", "CELERY_", "DATABASE_URL"))
    }
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        FANFOLD_VAR_DIR=str(tmp_path_factory.mktemp("embedded")),
        FANFOLD_SWEEP_INTERVAL="0.5",
        FANFOLD_LEASE_SECONDS="5",
    )
    done = subprocess.run(
        [sys.executable, str(SCRIPT)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def _at(value: str | None) -> datetime:
    assert value is not None
    return datetime.fromisoformat(value)


def test_tasks_embedded_a_retried_task_completes_with_every_field(results: dict[str, Any]) -> None:
    flaky = results["flaky"]
    me = f"{socket.gethostname()}:{results['pid']}"  # the in-process worker took each attempt
    assert (flaky["status"], flaky["return_value"], flaky["attempts"]) == ("SUCCESSFUL", 2, 2)
    assert flaky["worker_ids"] == [me, me]
    assert [path for path, _ in flaky["errors"]] == ["builtins.ValueError"]
    assert "attempt 1 fails" in flaky["errors"][0][1]
    assert (flaky["args"], flaky["kwargs"], flaky["backend"]) == ([1], {}, "default")
    assert flaky["task"] == {
        "path": "tests.support.sample_tasks.flaky",
        "priority": 0,
        "queue_name": "default",
        "run_after": None,
    }
    moments = [_at(flaky[k]) for k in ("enqueued_at", "started_at", "last_attempted_at")]
    assert moments == sorted(moments) and moments[1] < moments[2] <= _at(flaky["finished_at"])


def test_tasks_embedded_a_deferred_task_keeps_its_priority_and_run_after(
    results: dict[str, Any],
) -> None:
    deferred = results["deferred"]
    assert (deferred["status"], deferred["return_value"]) == ("SUCCESSFUL", 5)
    assert (deferred["args"], deferred["kwargs"], deferred["attempts"]) == ([2], {"b": 3}, 1)
    assert deferred["task"]["priority"] == 60
    assert _at(deferred["task"]["run_after"]) <= _at(deferred["started_at"])
    assert deferred["started_at"] == deferred["last_attempted_at"]
    assert deferred["errors"] == []


def test_tasks_embedded_a_failing_task_fails_with_its_error(results: dict[str, Any]) -> None:
    fails = results["fails"]
    assert (fails["status"], fails["return_value"], fails["attempts"]) == ("FAILED", None, 1)
    assert [path for path, _ in fails["errors"]] == ["builtins.KeyError"]
    assert "missing" in fails["errors"][0][1]
    assert _at(fails["started_at"]) <= _at(fails["finished_at"])
