"""`bench soak --minutes N`: a steady mixed load on prefork -c 2 workers for N minutes, and
whether anything leaks or drifts meanwhile.

The load (bench.soak_load) is paced: a cycle of the mix starts every `cycle_seconds` whatever
the workers' progress (an open loop, so a backlog shows as one rather than slowing the
producer), after a warm-up cycle followed to its end; the soak's finished runs are purged past
their retention once a minute (bench.soak_purge). Every `every_seconds` a row of the
table is printed: throughput, step and run latency, each worker process's RSS, the database's
connections, the broker's memory and queue depth, the history's size. The producer then stops
and the runs in flight are followed for up to `drain_seconds`; those still unfinished are lost
(and kept for a look; the finished ones the purge had not taken yet are deleted).

The verdict's figures: `rss_growth_percent`, the largest growth of a worker process's RSS
from the first interval's end (after warm-up) to the last one's; `p99_step_drift_percent`,
the last interval's p99 step latency against the first's; `runs_lost` and `errors` (runs that
failed, answers or starts that raised, ERROR lines in the workers' logs, workers that died).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.core.management.base import CommandError, CommandParser

from bench import environment, soak_gauges, soak_workflows
from bench.environment import Pool
from bench.soak_load import Load
from bench.soak_purge import SoakPurge
from bench.soak_workflows import PREFIX
from bench.stats import percentile
from bench.workers import WorkerProcess
from runtime.models import Run
from runtime.models.states import FINISHED_RUN_STATES

POLL_SECONDS = 0.25
WARM_UP_SECONDS = 120.0
# The targets for a 30-minute soak (the verdict; the bench never fails on them).
TARGETS = {"rss_growth_percent": 10.0, "p99_step_drift_percent": 20.0}
LOG_ERRORS = ("ERROR/", "CRITICAL/")


@dataclass(frozen=True)
class SoakPlan:
    minutes: float
    every_seconds: float = 300.0
    cycle_seconds: float = 1.0
    drain_seconds: float = 120.0


def add_arguments(sub: Any) -> CommandParser:
    """The `soak` subcommand's parser."""
    soak: CommandParser = sub.add_parser("soak", help="N minutes of steady mixed load")
    soak.add_argument("--minutes", type=float, default=30.0)
    soak.add_argument(
        "--every-seconds", type=float, default=300.0, help="a row of the table this often"
    )
    soak.add_argument(
        "--cycle-seconds", type=float, default=1.0, help="one cycle of the mix starts this often"
    )
    soak.add_argument(
        "--timeout", type=float, default=120.0, help="how long the runs in flight may drain"
    )
    soak.add_argument("--json", action="store_true", help="print one JSON object")
    return soak


def plan_of(options: dict[str, Any]) -> SoakPlan:
    for name in ("minutes", "every_seconds", "cycle_seconds", "timeout"):
        if options[name] <= 0:
            raise CommandError(f"--{name.replace('_', '-')} must be positive")
    return SoakPlan(
        options["minutes"], options["every_seconds"], options["cycle_seconds"], options["timeout"]
    )


def run_soak(plan: SoakPlan, show: Callable[[str], None]) -> dict[str, Any]:
    """The soak on the configured database and broker; `show` gets each row of the table."""
    pool = Pool("prefork", 1, 2)
    load = Load()
    # environment.workers gives the workers this process's version (the soak's workflows,
    # imported after its start, count in it).
    purger = SoakPurge()
    with environment.workers(pool, FANFOLD_WORKFLOW_MODULES=soak_workflows.__name__) as running:
        workers = running.processes
        _warm_up(load)
        show(header())
        purger.start()
        try:
            intervals = _steady(plan, load, workers, purger, show)
        finally:
            purger.stop()
        _drain(load, plan.drain_seconds)
        dead = [w.log_path.name for w in workers if w.proc.poll() is not None]
    for failure in purger.failures:
        load.error(failure)
    for name in dead:
        load.error(f"worker {name} exited during the soak")
    for line in _log_errors(workers):
        load.error(f"worker log: {line}")
    # What the purge had not taken yet; runs still in flight stay for a look (runs_lost).
    Run.objects.filter(workflow__startswith=PREFIX, status__in=FINISHED_RUN_STATES).delete()
    return _report(plan, pool, load, purger, intervals)


def _warm_up(load: Load) -> None:
    """One cycle of the mix, followed to its end: connections, prepares, imports."""
    load.start_cycle()
    deadline = time.monotonic() + WARM_UP_SECONDS
    while load.inflight and time.monotonic() < deadline:
        load.follow()
        time.sleep(POLL_SECONDS)
    if load.inflight:
        raise CommandError(f"the warm-up cycle did not finish in {WARM_UP_SECONDS:.0f} s")
    load.take_tally()


def _steady(
    plan: SoakPlan,
    load: Load,
    workers: list[WorkerProcess],
    purger: SoakPurge,
    show: Callable[[str], None],
) -> list[dict[str, Any]]:
    began = time.monotonic()
    end = began + plan.minutes * 60
    next_cycle, last_row = began, began
    started = load.started.total()
    intervals: list[dict[str, Any]] = []
    while True:
        now = time.monotonic()
        if now >= end:
            break
        while next_cycle <= now:  # a fixed rate: a late pass starts the cycles it owes
            load.start_cycle()
            next_cycle += plan.cycle_seconds
        load.follow()
        if time.monotonic() - last_row >= plan.every_seconds:
            row, last_row = _row(load, workers, purger, began, last_row, started), time.monotonic()
            started = load.started.total()
            intervals.append(row)
            show(line(row))
        time.sleep(max(0.0, min(POLL_SECONDS, next_cycle - time.monotonic())))
    if time.monotonic() - last_row >= plan.every_seconds / 2 or not intervals:
        intervals.append(_row(load, workers, purger, began, last_row, started))
        show(line(intervals[-1]))
    return intervals


def _row(
    load: Load,
    workers: list[WorkerProcess],
    purger: SoakPurge,
    began: float,
    since: float,
    started: int,
) -> dict[str, Any]:
    tally = load.take_tally()
    seconds = time.monotonic() - since
    return {
        "minute": round((time.monotonic() - began) / 60, 2),
        "runs_started": load.started.total() - started,
        "runs_finished": tally.statuses.total(),
        "runs_per_s": round(tally.statuses.total() / seconds, 2),
        "steps_per_s": round(len(tally.step_ms) / seconds, 1),
        "step_p50_ms": round(percentile(tally.step_ms, 50), 2),
        "step_p99_ms": round(percentile(tally.step_ms, 99), 2),
        "run_p50_ms": round(percentile(tally.run_ms, 50), 1),
        "run_p99_ms": round(percentile(tally.run_ms, 99), 1),
        "in_flight": len(load.inflight),
        "purged_so_far": purger.purged,
        **soak_gauges.read(workers),
    }


def _drain(load: Load, seconds: float) -> None:
    """Follow the runs in flight (answering them) until none is left or `seconds` pass."""
    deadline = time.monotonic() + seconds
    while load.inflight and time.monotonic() < deadline:
        load.follow()
        time.sleep(POLL_SECONDS)


def _log_errors(workers: list[WorkerProcess]) -> list[str]:
    found = []
    for worker in workers:
        text = worker.log_path.read_text(errors="replace")
        found += [line[:300] for line in text.splitlines() if any(m in line for m in LOG_ERRORS)]
    return found


COLUMNS = (
    ("minute", 7), ("runs_started", 8), ("runs_finished", 8), ("runs_per_s", 7),
    ("steps_per_s", 8), ("step_p50_ms", 8), ("step_p99_ms", 8), ("run_p50_ms", 8),
    ("run_p99_ms", 8), ("in_flight", 6), ("db_connections", 6), ("redis_used_mib", 7),
    ("queue_depth", 6), ("history_mib", 8), ("soak_runs_kept", 6),
    ("purged_so_far", 7),
)  # fmt: skip
HEADINGS = ("min", "started", "finished", "runs/s", "steps/s", "step50", "step99", "run50",
            "run99", "flight", "pgconn", "redisMB", "queue", "histMB", "kept",
            "purged")  # fmt: skip


def header() -> str:
    cells = [f"{h:>{w}}" for h, (_, w) in zip(HEADINGS, COLUMNS, strict=True)]
    return " ".join(cells) + "  worker RSS MiB"


def line(row: dict[str, Any]) -> str:
    cells = [f"{'-' if row[k] is None else row[k]:>{w}}" for k, w in COLUMNS]
    rss = " ".join(f"{name}={mib}" for name, mib in row["rss_mib"].items())
    return " ".join(cells) + "  " + rss


def _growth(first: float | None, last: float | None) -> float | None:
    if not first or last is None:
        return None
    return round((last - first) / first * 100, 1)


def _report(
    plan: SoakPlan, pool: Pool, load: Load, purger: SoakPurge, intervals: list[dict[str, Any]]
) -> dict[str, Any]:
    first, last = intervals[0], intervals[-1]
    by_process = {
        name: _growth(mib, last["rss_mib"].get(name)) for name, mib in first["rss_mib"].items()
    }
    growths = [g for g in by_process.values() if g is not None]
    rss_growth = max(growths) if growths else None
    drift = _growth(first["step_p99_ms"], last["step_p99_ms"])
    runs_lost = len(load.inflight) + load.unobserved
    return {
        "scenario": "soak",
        **environment.describe(),
        **pool.describe(),
        "minutes": plan.minutes,
        "every_seconds": plan.every_seconds,
        "cycle_seconds": plan.cycle_seconds,
        "runs_started": load.started.total(),
        "runs_started_by_kind": dict(load.started),
        "runs_completed": load.finished["completed"],
        "runs_finished": load.finished.total(),
        "runs_lost": runs_lost,
        "runs_purged": purger.purged,
        "autovacuum": soak_gauges.autovacuum(),
        "purge_passes": purger.passes,
        "errors": load.error_count,
        "error_samples": load.errors,
        "rss_growth_percent": rss_growth,
        "rss_growth_percent_by_process": by_process,
        "p99_step_drift_percent": drift,
        "targets": TARGETS,
        "within_targets": runs_lost == 0
        and load.error_count == 0
        and rss_growth is not None
        and rss_growth <= TARGETS["rss_growth_percent"]
        and drift is not None
        and drift <= TARGETS["p99_step_drift_percent"],
        "intervals": intervals,
    }
