"""`python manage.py fanfold ...`: the operator's command line.

    fanfold runs [--status S,S] [--workflow W] [--where NAME[__OP]=V ...] [--user NAME]
                 [--created-after T] ... [--limit N]    list runs, newest first (finding.py)
    fanfold mcp --user NAME                                 the MCP server over stdio, as NAME
    fanfold show RUN                                        one run with its steps
    fanfold cancel RUN                                      cancel a run in flight
    fanfold fork RUN --from N [--args JSON] [--kwargs JSON] fork from a position
    fanfold retry RUN                                       fork from the first failed step
    fanfold replay [--workflow W] [--status S] [--limit N] [--run RUN]
                                                            the replay check; exit 1 on a mismatch
    fanfold purge --older-than D [--dry-run] [--archive] [--pace F]
                                                            delete finished runs (data lifecycle)
    fanfold restore RUN                                     bring an archived run back
    fanfold rekey                                           re-encrypt payloads with the first key
    fanfold send RUN TOPIC VALUE_JSON [--idempotency-key K] a message to a run's mailbox
    fanfold signal NAME PAYLOAD_JSON [--idempotency-key K]  emit a signal to the runs waiting
    fanfold versions [upgrade FROM [--to V] [--dry-run] | retire FROM --cancel]
                                                            deployment versions (docs/deploying.md)

Every subcommand prints tables for people and, with `--json`, JSON for scripts (errors too:
`{"error": {"code", "message"}}`, exit status 1).
"""

from __future__ import annotations

import json
from argparse import ArgumentParser
from collections.abc import Callable
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from runtime.access import cli_actor
from runtime.core.errors import FanfoldError
from runtime.forks import fork_run, retry_run
from runtime.management import finding, lifecycle, mcp_serve, messages, replay, versions
from runtime.management.console import table
from runtime.management.records import (
    error_text,
    run_record,
    run_summary,
    step_record,
    write_json,
)
from runtime.models import Run
from runtime.selectors import fork_ids, steps_of
from runtime.services import cancel_run, get_run_row


class Command(BaseCommand):
    help = (
        "Operate runs: list, show, cancel, fork, retry, check histories by replay, send messages "
        "and emit signals."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="subcommand", required=True, metavar="SUBCOMMAND")
        (runs,) = finding.add_parsers(sub)
        mcp_serve.add_parsers(sub)
        for name, text in (("show", "one run and its steps"), ("cancel", "cancel a run")):
            sub.add_parser(name, help=text).add_argument("run")
        fork = sub.add_parser("fork", help="fork a run from a position")
        fork.add_argument("run")
        fork.add_argument("--from", dest="position", type=int, required=True)
        # Not dest="args": Django keeps a command's positional arguments there.
        fork.add_argument(
            "--args", dest="new_args", type=json.loads, help="new arguments, a JSON list"
        )
        fork.add_argument(
            "--kwargs", dest="new_kwargs", type=json.loads, help="new keyword arguments (JSON)"
        )
        sub.add_parser("retry", help="fork a run from its first failed step").add_argument("run")
        check = replay.add_parser(sub)
        listed = versions.add_parser(sub)
        shown = [sub.choices[n] for n in ("show", "cancel", "retry")]
        parsers: list[ArgumentParser] = [runs, check, fork, listed, *shown]
        for each in [*parsers, *messages.add_parsers(sub), *lifecycle.add_parsers(sub)]:
            each.add_argument("--json", action="store_true", help="JSON output")

    def handle(self, *args: Any, **options: Any) -> None:
        actions: dict[str, Callable[[dict[str, Any]], Any]] = {
            **finding.actions(self.stdout),
            **mcp_serve.actions(),
            "show": self._show,
            "cancel": lambda o: self._one(
                cancel_run(o["run"], reason="cancelled from the CLI", by=cli_actor()), o
            ),
            "fork": lambda o: self._one(
                fork_run(
                    o["run"], o["position"], o.get("new_args"), o.get("new_kwargs"), by=cli_actor()
                ),
                o,
            ),
            "retry": lambda o: self._one(retry_run(o["run"], by=cli_actor()), o),
            "replay": replay.action(self.stdout, self.stderr, self.style),
            "versions": versions.action(self.stdout),
            **lifecycle.actions(self.stdout),
            **messages.actions(self.stdout),
        }
        try:
            actions[options["subcommand"]](options)
        except (FanfoldError, ValueError, TypeError) as exc:
            code = getattr(exc, "code", "invalid")
            if options.get("json"):
                write_json(self.stdout, {"error": {"code": code, "message": str(exc)}})
            raise CommandError(f"{code}: {exc}") from exc

    def _show(self, options: dict[str, Any]) -> None:
        run = get_run_row(options["run"])
        steps = steps_of(run.id)
        forks = [str(i) for i in fork_ids(run)]
        if options["json"]:
            record = run_record(run)
            record["forks"] = forks
            record["steps"] = [step_record(s) for s in steps]
            write_json(self.stdout, record)
            return
        self.stdout.write(run_summary(run, forks))
        rows = [
            (s.position, s.name, s.kind, s.status, s.attempt, error_text(s.error)) for s in steps
        ]
        headers = ("#", "name", "kind", "status", "attempt", "error")
        self.stdout.write(table(headers, rows) if rows else "No steps yet.\n", ending="")

    def _one(self, run: Run, options: dict[str, Any]) -> None:
        if options["json"]:
            write_json(self.stdout, run_record(run))
            return
        self.stdout.write(run_summary(run, []))
