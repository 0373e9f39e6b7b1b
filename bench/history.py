"""`bench history`: a sequential run on an empty database, on a full one, and beside a purge.

The full database holds RUNS finished runs of EVENTS events each (5,000,000 events by
default), loaded by INSERT ... SELECT over generate_series, finished ten days ago: history
within the default retention (30 days), which the workers' own retention leaves alone. The
loader then runs VACUUM ANALYZE on the tables it filled, as autovacuum would long have done
in a deployment whose history grew over days. Then: a sequential run on it
(steps_per_second_full), and another while `fanfold purge --older-than 5d` deletes those runs
in a process of its own (steps_per_second_during_purge, purge_runs_per_second), with the peak
RSS of the worker and of the purge.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from django.db import connection

from bench.sequential import run_sequential
from bench.workers import ROOT, database_url
from runtime.models import Event, Run, Step

_LOAD_RUNS = (
    f"INSERT INTO {Run._meta.db_table} (id, workflow, input, status, result, created_at, "
    "started_at, finished_at, updated_at, last_seq, wakeups, priority, admitted) "
    "SELECT md5('bench-history-' || i)::uuid, 'bench.history', '{\"args\": [1]}', 'completed', "
    "'1', now() - interval '10 days', now() - interval '10 days', now() - interval '10 days', "
    "now() - interval '10 days', %s, 0, 0, true FROM generate_series(%s, %s) AS i"
)
_LOAD_STEPS = (
    f"INSERT INTO {Step._meta.db_table} (id, run_id, position, name, kind, status, attempt, "
    "input, result, created_at, started_at, finished_at) "
    "SELECT md5('bench-history-step-' || i || '-' || p)::uuid, md5('bench-history-' || i)::uuid, "
    "p, 'bench.noop', 'step', 'completed', 1, NULL, to_jsonb(p), now() - interval '10 days', "
    "now() - interval '10 days', now() - interval '10 days' "
    "FROM generate_series(%s, %s) AS i, generate_series(1, %s) AS p"
)
_LOAD_EVENTS = (
    f"INSERT INTO {Event._meta.db_table} (run_id, seq, type, step_id, payload, created_at) "
    "SELECT md5('bench-history-' || i)::uuid, s, 'step_completed', NULL, "
    "jsonb_build_object('attempt', 1, 'result', s), now() - interval '10 days' "
    "FROM generate_series(%s, %s) AS i, generate_series(1, %s) AS s"
)


def load(runs: int, events: int, chunk: int = 5000) -> float:
    """Insert the finished runs with their events (and a step per two events); returns s."""
    began = time.monotonic()
    with connection.cursor() as cursor:
        for first in range(1, runs + 1, chunk):
            last = min(first + chunk - 1, runs)
            cursor.execute(_LOAD_RUNS, [events, first, last])
            cursor.execute(_LOAD_STEPS, [first, last, events // 2])
            cursor.execute(_LOAD_EVENTS, [first, last, events])
        tables = ", ".join(m._meta.db_table for m in (Run, Step, Event))
        cursor.execute(f"VACUUM ANALYZE {tables}")  # the visibility map and the statistics
    return time.monotonic() - began


class _PeakRss(threading.Thread):
    """The highest VmHWM of the worker processes (the bench's children but the purge)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak_kib = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.5):
            for status in Path("/proc").glob("[0-9]*/status"):
                try:
                    text = status.read_text()
                except OSError:
                    continue
                if "celery" not in _cmdline(status.parent) or "VmHWM" not in text:
                    continue
                kib = int(text.split("VmHWM:")[1].split()[0])
                self.peak_kib = max(self.peak_kib, kib)


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _purge_process() -> subprocess.Popen[bytes]:
    command = [sys.executable, "manage.py", "fanfold", "purge", "--older-than", "5d", "--json"]
    env = {**os.environ, "DATABASE_URL": database_url()}
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE)


def run_history(runs: int, events: int, steps: int, timeout: float) -> dict[str, Any]:
    """The figures of `bench history` (see the module's docstring)."""
    Run.objects.filter(workflow="bench.history").delete()
    empty = run_sequential(steps, timeout)["steps_per_second"]
    load_seconds = load(runs, events)
    full = run_sequential(steps, timeout)["steps_per_second"]
    rss = _PeakRss()
    rss.start()
    purge = _purge_process()
    began = time.monotonic()
    during = run_sequential(steps, timeout)["steps_per_second"]
    _, status, usage = os.wait4(purge.pid, 0)
    purge_seconds = time.monotonic() - began
    rss.stop.set()
    left = Run.objects.filter(workflow="bench.history").count()
    return {
        "scenario": "history",
        "runs": runs,
        "events_per_run": events,
        "load_seconds": round(load_seconds, 1),
        "steps": steps,
        "steps_per_second_empty": empty,
        "steps_per_second_full": full,
        "steps_per_second_during_purge": during,
        "full_to_empty": round(full / empty, 3),
        "during_purge_to_full": round(during / full, 3),
        "purge_runs_per_second": round((runs - left) / purge_seconds, 1),
        "purge_exit_status": os.waitstatus_to_exitcode(status),
        "purge_peak_rss_mib": round(usage.ru_maxrss / 1024, 1),
        "worker_peak_rss_mib": round(rss.peak_kib / 1024, 1),
        "runs_left": left,
    }
