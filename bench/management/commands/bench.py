"""`python manage.py bench SCENARIO ...`: the benchmark suite, printed as a table or JSON."""

from __future__ import annotations

import json
import os
from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from bench import tracing
from bench.agents import run_agents
from bench.collector import run_collector_probe
from bench.environment import DEFAULT_CONCURRENCY, Pool
from bench.fanout import run_fanout
from bench.flow import run_flow
from bench.history import run_history
from bench.io_fanout import run_io_fanout
from bench.observe import observe_fanout, observe_sequential
from bench.options import flatten, pool_of, refuse
from bench.replaycheck import run_replay_check
from bench.resume import run_resume
from bench.search import run_search
from bench.sequential import run_concurrent, run_sequential
from bench.signals import run_signals
from bench.soak import add_arguments as add_soak_arguments
from bench.soak import plan_of, run_soak
from bench.streams import run_stream
from bench.tasks_backend import run_tasks
from bench.testkit import measure_here, run_testkit
from bench.updates import run_update
from bench.versions import run_versions_seq, run_versions_upgrade
from bench.worker_scale import run_pooled_vs_direct, run_worker_scale
from bench.worker_start import run_worker_start
from runtime.lifecycle.retention import DEFAULT_PACE


def _sample_traces(ratio: float) -> None:
    """The "on" side's sampler, for this process and the workers it starts (their env)."""
    os.environ[tracing.RATIO_ENV] = repr(ratio)


class Command(BaseCommand):
    help = (
        "Run a Fanfold benchmark: seq, concurrent, checkpoint, fanout, replay, upgrade, stream, "
        "flow, history, search, signals, update, resume, tasks, agents, testkit, workers or "
        "soak."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="scenario", required=True)
        seq = sub.add_parser("seq", help="one run of N sequential no-op steps")
        seq.add_argument("--steps", type=int, default=1000)
        seq.add_argument(
            "--versions",
            action="store_true",
            help="runs unpinned and pinned to the workers' version, --pairs pairs alternating",
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
        fan.add_argument(
            "--repeat", type=int, default=1, help="pairs of runs to take the medians of"
        )
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
        sig.add_argument(
            "--waiting", type=int, default=10_000, help="runs waiting on other matches"
        )
        sig.add_argument("--samples", type=int, default=1000, help="emits timed among them")
        sig.add_argument("--repeat", type=int, default=1, help="rounds to take the medians of")
        upd = sub.add_parser("update", help="update round trips against a message + value")
        upd.add_argument("--updates", type=int, default=1000, help="sequential round trips")
        res = sub.add_parser("resume", help="a long-lived run's resumes, warm and cache off")
        res.add_argument("--messages", type=int, default=1000, help="round trips of one run")
        res.add_argument("--runs", type=int, default=1000, help="runs resumed by signals")
        tasks = sub.add_parser("tasks", help="Django tasks: Fanfold's backend vs django-tasks-db")
        tasks.add_argument("--tasks", type=int, default=1000, help="no-op tasks per side")
        tasks.add_argument(
            "--interval", type=float, default=0.1, help="db_worker's idle poll interval (s)"
        )
        scale = sub.add_parser(
            "workers", help="N worker processes on one database through a pooler"
        )
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
                "--pairs", type=int, default=3, help="off/on pairs for --observe (--versions)"
            )
            p.add_argument(
                "--trace-ratio",
                type=float,
                default=1.0,
                metavar="R",
                help="with --observe: keep the traces of this fraction of run passes "
                "(default 1: every span)",
            )
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
        for p in (
            seq,
            conc,
            probe,
            fan,
            check,
            upgrading,
            streams,
            flow,
            sig,
            tasks,
            agents,
            scale,
            start,
            upd,
            res,
            search,
            kit,
        ):
            p.add_argument("--json", action="store_true", help="print one JSON object")
            p.add_argument("--timeout", type=float, default=600.0)

    def handle(self, *args: Any, **options: Any) -> None:
        scenario = options["scenario"]
        refuse(scenario, options)  # before the migrate: a refusal touches no database
        call_command("migrate", verbosity=0)
        report = self._run(scenario, options)
        if options["json"]:
            self.stdout.write(json.dumps(report))
            return
        if scenario == "soak":  # its table was printed as it went
            report.pop("intervals")
        self.stdout.write(self.style.MIGRATE_HEADING(f"bench {scenario}"))
        for key, value in flatten(report):
            self.stdout.write(f"  {key:<32} {value}")

    def _run(self, scenario: str, options: dict[str, Any]) -> dict[str, Any]:
        observe = options.get("observe", False)
        if observe:
            _sample_traces(options["trace_ratio"])
        if scenario == "seq":
            pool = pool_of(options, threads_default=4)
            if observe:
                return observe_sequential(
                    options["steps"], options["timeout"], options["pairs"], pool
                )
            if options["versions"]:
                if observe:
                    raise CommandError("--versions and --observe are two benchmarks: one at a time")
                return run_versions_seq(
                    options["steps"], options["pairs"], options["timeout"], pool
                )
            return run_sequential(options["steps"], options["timeout"], pool=pool)
        if scenario == "concurrent":
            pool = pool_of(options, threads_default=options["runs"])
            if options["runs_on_threads"] < 0:
                raise CommandError("--runs-on-threads must not be negative")
            return run_concurrent(
                options["runs"], options["steps"], options["timeout"], pool,
                options["runs_on_threads"],
            )  # fmt: skip
        if scenario == "replay":
            return run_replay_check(options["runs"], options["steps"], options["timeout"])
        if scenario == "upgrade":
            return run_versions_upgrade(options["runs"], options["steps"], options["timeout"])
        if scenario == "checkpoint":
            return run_collector_probe(options["samples"], options["window_ms"] / 1000)
        if scenario == "history":
            return run_history(
                options["events"],
                options["events_per_run"],
                options["steps"],
                options["rounds"],
                options["timeout"],
                options["purge_pace"],
                options["due_events"],
            )
        if scenario == "search":
            keys = ("runs", "samples", "starts", "rounds", "reload")
            return run_search(*(options[k] for k in keys))
        if scenario == "flow":
            return run_flow(
                options["runs"], options["steps"], options["repeat"], options["timeout"]
            )
        if scenario == "testkit":
            if options["here"]:
                return measure_here(options["rounds"])
            return run_testkit(options["rounds"], options["timeout"])
        if scenario == "workers":
            return self._workers(options)
        if scenario == "soak":
            out = self.stderr if options["json"] else self.stdout
            return run_soak(plan_of(options), out.write)
        if scenario == "worker-start":
            if options["rounds"] < 1:
                raise CommandError("--rounds must be at least 1")
            return run_worker_start(options["rounds"], options["timeout"])
        if scenario == "agents":
            pool = Pool("prefork", 1, options["concurrency"])
            return run_agents(options["rounds"], options["timeout"], pool)
        if scenario == "stream":
            return run_stream(
                options["chunks"], options["clients"], options["pause_ms"], options["timeout"]
            )
        pool = pool_of(options, threads_default=DEFAULT_CONCURRENCY["threads"])
        if scenario == "tasks":
            if options["interval"] <= 0:
                raise CommandError("--interval must be positive")
            return run_tasks(options["tasks"], options["timeout"], pool, options["interval"])
        if scenario == "update":
            return run_update(options["updates"], options["timeout"], pool)
        if scenario == "resume":
            return run_resume(options["messages"], options["runs"], options["timeout"], pool)
        if scenario == "signals":
            return run_signals(
                options["runs"], options["waiting"], options["samples"], options["repeat"],
                options["timeout"], pool,
            )  # fmt: skip
        if options["io_ms"] is not None:
            if options["io_ms"] < 0 or observe:
                raise CommandError("--io-ms takes a non-negative wait and no --observe")
            return run_io_fanout(
                options["branches"], options["io_ms"], options["use_async"], options["timeout"],
                options["repeat"], pool,
            )  # fmt: skip
        if options["use_async"]:
            raise CommandError("--async goes with --io-ms")
        if observe:
            return observe_fanout(
                options["branches"], options["timeout"], options["repeat"], options["pairs"], pool
            )
        return run_fanout(options["branches"], options["timeout"], options["repeat"], pool=pool)

    def _workers(self, options: dict[str, Any]) -> dict[str, Any]:
        if options["hosts"] > options["processes"] or options["body_ms"] < 0:
            raise CommandError("--hosts must not exceed --processes; --body-ms must be >= 0")
        report = run_worker_scale(
            options["processes"], options["hosts"], options["runs"], options["steps"],
            options["branches"], options["body_ms"], options["timeout"],
        )  # fmt: skip
        if options["compare"]:
            report["pooled_vs_direct"] = run_pooled_vs_direct(
                options["compare_steps"], options["compare_branches"], options["repeat"],
                options["timeout"],
            )  # fmt: skip
        return report
