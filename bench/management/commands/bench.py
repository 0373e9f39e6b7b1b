"""`python manage.py bench SCENARIO ...`: the benchmark suite, printed as a table or JSON."""

from __future__ import annotations

import json
from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from bench.collector import run_collector_probe
from bench.fanout import run_fanout
from bench.flow import run_flow
from bench.observe import observe_fanout, observe_sequential
from bench.replaycheck import run_replay_check
from bench.sequential import run_concurrent, run_sequential
from bench.streams import run_stream

# Options that count something: each must be at least 1.
COUNTS = ("steps", "runs", "samples", "branches", "repeat", "pairs", "chunks", "clients")


class Command(BaseCommand):
    help = "Run a Fanfold benchmark: seq, concurrent, checkpoint, fanout, replay, stream or flow."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="scenario", required=True)
        seq = sub.add_parser("seq", help="one run of N sequential no-op steps")
        seq.add_argument("--steps", type=int, default=1000)
        conc = sub.add_parser("concurrent", help="many runs of sequential steps in one worker")
        conc.add_argument("--runs", type=int, default=50)
        conc.add_argument("--steps", type=int, default=200)
        probe = sub.add_parser("checkpoint", help="the checkpoint collector probe")
        probe.add_argument("--samples", type=int, default=200)
        probe.add_argument("--window-ms", type=float, default=2.0)
        fan = sub.add_parser("fanout", help="a durable fan-out against a plain Celery group")
        fan.add_argument("--branches", type=int, default=1000)
        fan.add_argument(
            "--repeat", type=int, default=1, help="pairs of runs to take the medians of"
        )
        check = sub.add_parser("replay", help="the replay check over many recorded runs")
        check.add_argument("--runs", type=int, default=10_000)
        check.add_argument("--steps", type=int, default=20, help="steps per recorded run")
        for p in (seq, fan):
            p.add_argument(
                "--observe",
                action="store_true",
                help="run with metrics and tracing off, then on, and report both",
            )
            p.add_argument("--pairs", type=int, default=3, help="off/on pairs for --observe")
            p.add_argument(
                "--pool",
                choices=("prefork", "threads"),
                default=None,
                help="the workers' pool (default: prefork with --observe, else threads)",
            )
        streams = sub.add_parser("stream", help="chunk latency from a step to SSE clients")
        streams.add_argument("--chunks", type=int, default=1000)
        streams.add_argument("--clients", type=int, default=1)
        streams.add_argument(
            "--pause-ms", type=float, default=2.0, help="the step's pause between writes"
        )
        flow = sub.add_parser("flow", help="admission and rate-limit overhead, limits off vs on")
        flow.add_argument("--runs", type=int, default=100)
        flow.add_argument("--steps", type=int, default=20)
        flow.add_argument("--repeat", type=int, default=3, help="rounds to take the medians of")
        for p in (seq, conc, probe, fan, check, streams, flow):
            p.add_argument("--json", action="store_true", help="print one JSON object")
            p.add_argument("--timeout", type=float, default=600.0)

    def handle(self, *args: Any, **options: Any) -> None:
        call_command("migrate", verbosity=0)
        scenario = options["scenario"]
        report = self._run(scenario, options)
        if options["json"]:
            self.stdout.write(json.dumps(report))
            return
        self.stdout.write(self.style.MIGRATE_HEADING(f"bench {scenario}"))
        for key, value in _flatten(report):
            self.stdout.write(f"  {key:<32} {value}")

    def _run(self, scenario: str, options: dict[str, Any]) -> dict[str, Any]:
        for name in (
            "steps",
            "runs",
            "samples",
            "branches",
            "repeat",
            "pairs",
            "chunks",
            "clients",
        ):
            if name in options and options[name] is not None and options[name] < 1:
                raise CommandError(f"--{name} must be at least 1")
        observe = options.get("observe", False)
        pool = options.get("pool") or ("prefork" if observe else "threads")
        if scenario == "seq":
            if observe:
                return observe_sequential(
                    options["steps"], options["timeout"], options["pairs"], pool
                )
            return run_sequential(options["steps"], options["timeout"], pool=pool)
        if scenario == "concurrent":
            return run_concurrent(options["runs"], options["steps"], options["timeout"])
        if scenario == "replay":
            return run_replay_check(options["runs"], options["steps"], options["timeout"])
        if scenario == "checkpoint":
            return run_collector_probe(options["samples"], options["window_ms"] / 1000)
        if scenario == "flow":
            return run_flow(
                options["runs"], options["steps"], options["repeat"], options["timeout"]
            )
        if scenario == "stream":
            return run_stream(
                options["chunks"], options["clients"], options["pause_ms"], options["timeout"]
            )
        if observe:
            return observe_fanout(
                options["branches"], options["timeout"], options["repeat"], options["pairs"], pool
            )
        return run_fanout(options["branches"], options["timeout"], options["repeat"], pool=pool)


def _flatten(report: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    rows: list[tuple[str, Any]] = []
    for key, value in report.items():
        if isinstance(value, dict):
            rows.extend(_flatten(value, f"{prefix}{key}."))
        else:
            rows.append((f"{prefix}{key}", value))
    return rows
