"""The `bench` command's scenarios and their options (bench.management.commands.bench)."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from bench.soak import add_arguments as add_soak_arguments
from runtime.lifecycle.retention import DEFAULT_PACE


def add_scenarios(parser: ArgumentParser) -> None:
    """Every scenario as a subcommand of `parser` (the command's parser)."""
    sub = parser.add_subparsers(dest="scenario", required=True)
    for p in (*_worker_scenarios(sub), *_data_scenarios(sub)):
        p.add_argument("--json", action="store_true", help="print one JSON object")
        p.add_argument("--timeout", type=float, default=600.0)


def _worker_scenarios(sub: Any) -> list[ArgumentParser]:
    """Runs, fan-outs, replay, versions, signals, updates, resumes, tasks and worker scale;
    the ones that take --json and --timeout."""
    seq = sub.add_parser("seq", help="one run of N sequential no-op steps")
    seq.add_argument("--steps", type=int, default=1000)
    seq.add_argument(
        "--versions",
        action="store_true",
        help="runs unpinned and pinned to the workers' version, --pairs pairs alternating",
    )
    seq.add_argument(
        "--vs-dbos",
        action="store_true",
        help="against the same workflow on DBOS, --pairs pairs alternating (the dev extra)",
    )
    seq.add_argument(
        "--long-steps",
        type=int,
        metavar="N",
        help="runs of --steps and of N steps alternating, --pairs pairs: the long run's rate",
    )
    conc = sub.add_parser("concurrent", help="many runs of sequential steps in one worker")
    conc.add_argument("--runs", type=int, default=50)
    conc.add_argument("--steps", type=int, default=200)
    conc.add_argument(
        "--runs-on-threads",
        type=int,
        default=0,
        metavar="C",
        help="executions on a queue of their own on a threads worker -c C; the pool keeps "
        "the default queue",
    )
    probe = sub.add_parser("checkpoint", help="the checkpoint collector probe")
    probe.add_argument("--samples", type=int, default=200)
    probe.add_argument("--window-ms", type=float, default=2.0)
    fan = sub.add_parser("fanout", help="a durable fan-out against a plain Celery group")
    fan.add_argument("--branches", type=int, default=1000)
    fan.add_argument("--repeat", type=int, default=1, help="pairs of runs to take the medians of")
    fan.add_argument(
        "--io-ms",
        type=float,
        default=None,
        metavar="MS",
        help="branches wait MS milliseconds on I/O; compared with a no-op fan-out and "
        "Celery's group of the same waits on a gevent -c 500 worker",
    )
    fan.add_argument(
        "--async",
        dest="use_async",
        action="store_true",
        help="with --io-ms: the branches are `async def` steps awaiting the wait",
    )
    check = sub.add_parser("replay", help="the replay check over many recorded runs")
    upgrading = sub.add_parser("upgrade", help="`fanfold versions upgrade --dry-run`")
    for p in (check, upgrading):
        p.add_argument("--runs", type=int, default=10_000)
        p.add_argument("--steps", type=int, default=20, help="steps per recorded run")
    sig = sub.add_parser("signals", help="runs resumed by signals vs by callback posts")
    sig.add_argument("--runs", type=int, default=1000, help="runs resumed per side")
    sig.add_argument("--waiting", type=int, default=10_000, help="runs waiting on other matches")
    sig.add_argument("--samples", type=int, default=1000, help="emits timed among them")
    sig.add_argument("--repeat", type=int, default=1, help="rounds to take the medians of")
    upd = sub.add_parser("update", help="update round trips against a message + value")
    upd.add_argument("--updates", type=int, default=1000, help="sequential round trips")
    res = sub.add_parser("resume", help="a long-lived run's resumes, warm and cache off")
    res.add_argument("--messages", type=int, default=1000, help="round trips of one run")
    res.add_argument("--runs", type=int, default=1000, help="runs resumed by signals")
    res.add_argument("--emitters", type=int, default=8, help="threads emitting the signals at once")
    tasks = sub.add_parser("tasks", help="Django tasks: Fanfold's backend vs django-tasks-db")
    tasks.add_argument("--tasks", type=int, default=1000, help="no-op tasks per side")
    tasks.add_argument(
        "--interval", type=float, default=0.1, help="db_worker's idle poll interval (s)"
    )
    scale = sub.add_parser("workers", help="N worker processes on one database through a pooler")
    scale.add_argument("--processes", type=int, default=200, help="worker processes")
    scale.add_argument("--hosts", type=int, default=4, help="worker main processes")
    scale.add_argument("--runs", type=int, default=50, help="workflows at once")
    scale.add_argument("--steps", type=int, default=5, help="steps before and after")
    scale.add_argument("--branches", type=int, default=20, help="fan-out branches per run")
    scale.add_argument("--body-ms", type=float, default=50.0, help="each body's sleep")
    scale.add_argument(
        "--compare",
        action="store_true",
        help="then bench seq and bench fanout, workers through the pooler and direct",
    )
    scale.add_argument("--compare-steps", type=int, default=500)
    scale.add_argument("--compare-branches", type=int, default=500)
    scale.add_argument("--repeat", type=int, default=2, help="rounds of the comparison")
    for p in (seq, conc, fan, sig, tasks, upd, res):
        p.add_argument(
            "--pool",
            choices=("prefork", "threads"),
            default="prefork",
            help="the workers' Celery pool (default prefork, as `celery worker`)",
        )
        p.add_argument("--workers", type=int, default=1, help="worker processes")
        p.add_argument(
            "--concurrency",
            type=int,
            default=None,
            help="each worker's -c (default: 2 for prefork; threads: 16, or --runs)",
        )
    for p in (seq, fan):
        p.add_argument(
            "--observe",
            action="store_true",
            help="run with metrics and tracing off, then on, and report both",
        )
        p.add_argument(
            "--pairs",
            type=int,
            default=3,
            help="pairs for --observe (off/on), --versions, --vs-dbos or --long-steps",
        )
        p.add_argument(
            "--trace-ratio",
            type=float,
            default=1.0,
            metavar="R",
            help="with --observe: keep the traces of this fraction of run passes "
            "(default 1: every span)",
        )
    return [seq, conc, probe, fan, check, upgrading, sig, tasks, scale, upd, res]


def _data_scenarios(sub: Any) -> list[ArgumentParser]:
    """Streams, history, search, flow, agents, the test kit, worker start and soak; the ones
    that take --json and --timeout."""
    streams = sub.add_parser("stream", help="chunk latency from a step to SSE clients")
    streams.add_argument("--chunks", type=int, default=1000)
    streams.add_argument("--clients", type=int, default=1)
    streams.add_argument(
        "--pause-ms", type=float, default=2.0, help="the step's pause between writes"
    )
    history = sub.add_parser("history", help="steps on an empty and a full database, purge")
    history.add_argument(
        "--events", type=int, default=5_000_000, help="events of history, loaded with COPY"
    )
    history.add_argument(
        "--due-events",
        type=int,
        default=5_000_000,
        help="of those, events the purge retires, loaded each run (at most --events); the "
        "rest is kept in older weeks, loaded once and reused",
    )
    history.add_argument("--events-per-run", type=int, default=100)
    history.add_argument("--steps", type=int, default=1000, help="steps per round")
    history.add_argument(
        "--rounds", type=int, default=6, help="rounds of the empty and of the full database"
    )
    history.add_argument(
        "--purge-pace", type=float, default=DEFAULT_PACE, help="the purge's --pace"
    )
    history.add_argument("--timeout", type=float, default=600.0)
    history.add_argument("--json", action="store_true")
    search = sub.add_parser("search", help="queries by search attribute on 1M runs, starts")
    for flag, default in (
        ("runs", 1_000_000),
        ("samples", 200),
        ("starts", 500),
        ("rounds", 4),
    ):
        search.add_argument(f"--{flag}", type=int, default=default)
    search.add_argument("--reload", action="store_true", help="load the runs again")
    flow = sub.add_parser("flow", help="admission and rate-limit overhead, limits off vs on")
    flow.add_argument("--runs", type=int, default=100)
    flow.add_argument("--steps", type=int, default=20)
    flow.add_argument("--repeat", type=int, default=3, help="rounds to take the medians of")
    agents = sub.add_parser("agents", help="a durable pydantic-ai agent's cost per step")
    agents.add_argument("--rounds", type=int, default=5)
    agents.add_argument("--concurrency", type=int, default=2, help="prefork -c")
    kit = sub.add_parser("testkit", help="the test kit's time skipping, SQLite and PostgreSQL")
    kit.add_argument("--rounds", type=int, default=5)
    kit.add_argument("--here", action="store_true", help="on this DATABASE_URL only")
    start = sub.add_parser("worker-start", help="a worker's launch-to-ready time")
    start.add_argument("--rounds", type=int, default=3)
    add_soak_arguments(sub)
    return [streams, flow, agents, start, search, kit]
