"""`python manage.py bench SCENARIO ...`: the benchmark suite, printed as a table or JSON."""

from __future__ import annotations

import json
import os
from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from bench import tracing
from bench.agents import run_agents
from bench.arguments import add_scenarios
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
from bench.seq_long import run_seq_long
from bench.sequential import run_concurrent, run_sequential
from bench.signals import run_signals
from bench.soak import plan_of, run_soak
from bench.streams import run_stream
from bench.tasks_backend import run_tasks
from bench.testkit import measure_here, run_testkit
from bench.updates import run_update
from bench.versions import run_versions_seq, run_versions_upgrade
from bench.vs_dbos import run_seq_vs_dbos
from bench.worker_scale import run_pooled_vs_direct, run_worker_scale
from bench.worker_start import run_worker_start


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
        add_scenarios(parser)

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
            if options["long_steps"] is not None:
                return run_seq_long(
                    options["steps"], options["long_steps"], options["pairs"],
                    options["timeout"], pool,
                )  # fmt: skip
            if options["vs_dbos"]:
                return run_seq_vs_dbos(options["steps"], options["pairs"], options["timeout"], pool)
            if options["versions"]:
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
            return run_resume(
                options["messages"], options["runs"], options["timeout"], pool, options["emitters"]
            )
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
