"""`python manage.py fanfold ...`: the operator's command line.

    fanfold runs [--status S] [--workflow W] [--limit N]    list runs, newest first
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

Every subcommand prints tables for people and, with `--json`, JSON for scripts (errors too:
`{"error": {"code", "message"}}`, exit status 1).
"""

from __future__ import annotations

import json
import sys
import time
from argparse import ArgumentParser
from collections.abc import Callable
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from runtime.access import cli_actor
from runtime.core.errors import FanfoldError
from runtime.forks import fork_run, retry_run
from runtime.management import lifecycle
from runtime.management.console import ProgressBar, table
from runtime.messaging.mailbox import send_message
from runtime.messaging.signals import emit
from runtime.models import Run, RunStatus, Step, values
from runtime.replay_check import ReplayReport, replay_runs
from runtime.selectors import fork_ids, list_runs, runs_to_replay, steps_of
from runtime.services import cancel_run, get_run_row


def run_record(run: Run) -> dict[str, Any]:
    """A run as the `--json` output shows it."""
    error = dict(run.error) if isinstance(run.error, dict) else run.error
    if isinstance(error, dict):
        error.pop("traceback", None)
    return {
        "id": str(run.id),
        "workflow": run.workflow,
        "status": run.status,
        "args": run.args,
        "kwargs": run.kwargs,
        "result": run.result,
        "error": error,
        "created_at": run.created_at.isoformat(),
        "started_at": run.started_at.isoformat() if run.started_at else None,
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
        "forked_from": str(run.forked_from_id) if run.forked_from_id else None,
        "forked_from_position": run.forked_from_position,
    }


class Command(BaseCommand):
    help = (
        "Operate runs: list, show, cancel, fork, retry, check histories by replay, send messages "
        "and emit signals."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="subcommand", required=True, metavar="SUBCOMMAND")
        runs = sub.add_parser("runs", help="list runs, newest first")
        runs.add_argument("--status", choices=values(RunStatus))
        runs.add_argument("--workflow")
        runs.add_argument("--limit", type=int, default=50)
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
        check = sub.add_parser("replay", help="check recorded histories against the code")
        check.add_argument("--workflow")
        check.add_argument(
            "--status", choices=values(RunStatus), action="append", help="repeatable"
        )
        check.add_argument("--limit", type=int, help="the newest N runs only")
        check.add_argument("--run", action="append", help="this run (repeatable)")
        send = sub.add_parser("send", help="send a message to a run's mailbox")
        send.add_argument("run")
        send.add_argument("topic")
        send.add_argument("value", metavar="VALUE_JSON", help="the message, a JSON value")
        signal = sub.add_parser("signal", help="emit a signal to every run waiting for it")
        signal.add_argument("name")
        signal.add_argument("payload", metavar="PAYLOAD_JSON", help="the payload, a JSON value")
        for each in (send, signal):
            each.add_argument("--idempotency-key", help="a repeat with this key is a no-op")
        shown = [sub.choices[n] for n in ("show", "cancel", "retry")]
        parsers: list[ArgumentParser] = [runs, check, fork, send, signal, *shown]
        for each_parser in [*parsers, *lifecycle.add_parsers(sub)]:
            each_parser.add_argument("--json", action="store_true", help="JSON output")

    def handle(self, *args: Any, **options: Any) -> None:
        actions: dict[str, Callable[[dict[str, Any]], Any]] = {
            "runs": self._runs,
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
            "replay": self._replay,
            **lifecycle.actions(self.stdout),
            "send": self._send,
            "signal": self._signal,
        }
        try:
            actions[options["subcommand"]](options)
        except (FanfoldError, ValueError, TypeError) as exc:
            code = getattr(exc, "code", "invalid")
            if options.get("json"):
                self._json({"error": {"code": code, "message": str(exc)}})
            raise CommandError(f"{code}: {exc}") from exc

    # -- subcommands ----------------------------------------------------------------------------

    def _runs(self, options: dict[str, Any]) -> None:
        runs = list(list_runs(options.get("status"), options.get("workflow"))[: options["limit"]])
        if options["json"]:
            self._json([run_record(r) for r in runs])
            return
        rows = [
            (
                r.id,
                r.workflow,
                r.status,
                _when(r.created_at),
                _when(r.finished_at),
                r.forked_from_id,
            )
            for r in runs
        ]
        headers = ("run", "workflow", "status", "created", "finished", "forked from")
        self.stdout.write(table(headers, rows), ending="")

    def _show(self, options: dict[str, Any]) -> None:
        run = get_run_row(options["run"])
        steps = steps_of(run.id)
        forks = [str(i) for i in fork_ids(run)]
        if options["json"]:
            record = run_record(run)
            record["forks"] = forks
            record["steps"] = [_step_record(s) for s in steps]
            self._json(record)
            return
        self._summary(run, forks)
        rows = [
            (s.position, s.name, s.kind, s.status, s.attempt, _error_text(s.error)) for s in steps
        ]
        headers = ("#", "name", "kind", "status", "attempt", "error")
        self.stdout.write(table(headers, rows) if rows else "No steps yet.\n", ending="")

    def _send(self, options: dict[str, Any]) -> None:
        value = _json_argument(options["value"], "VALUE_JSON")
        sent = send_message(options["run"], options["topic"], value,
                            idempotency_key=options["idempotency_key"], by=cli_actor())  # fmt: skip
        if options["json"]:
            self._json({"message_id": sent.id, "created": sent.created})
            return
        again = "" if sent.created else " (already sent with this idempotency key)"
        self.stdout.write(f"message {sent.id} sent to run {options['run']}{again}\n")

    def _signal(self, options: dict[str, Any]) -> None:
        payload = _json_argument(options["payload"], "PAYLOAD_JSON")
        emitted = emit(options["name"], payload, options["idempotency_key"], by=cli_actor())
        if options["json"]:
            self._json({"signal_id": emitted.id, "delivered": emitted.delivered,
                        "created": emitted.created})  # fmt: skip
            return
        again = "" if emitted.created else " (already emitted with this idempotency key)"
        runs = "run" if emitted.delivered == 1 else "runs"
        self.stdout.write(f"signal {emitted.id} taken by {emitted.delivered} {runs}{again}\n")

    def _one(self, run: Run, options: dict[str, Any]) -> None:
        if options["json"]:
            self._json(run_record(run))
            return
        self._summary(run, [])

    def _replay(self, options: dict[str, Any]) -> None:
        runs = runs_to_replay(
            workflow=options.get("workflow"),
            statuses=options.get("status"),
            run_ids=[get_run_row(r).id for r in options.get("run") or []],
            limit=options.get("limit"),
        )
        total = runs.count()
        bar = None if options["json"] else ProgressBar(self._err, total, "replaying")
        started = time.monotonic()
        mismatched: list[ReplayReport] = []
        checked = 0
        for report in replay_runs(runs.iterator(chunk_size=500)):
            checked += 1
            if not report.ok:
                mismatched.append(report)
            if bar is not None:
                bar.advance(note=f"{len(mismatched)} mismatched")
        if bar is not None:
            bar.close()
        self._replay_output(checked, mismatched, time.monotonic() - started, options["json"])
        if mismatched:
            sys.exit(1)

    # -- output ---------------------------------------------------------------------------------

    def _replay_output(
        self, checked: int, mismatched: list[ReplayReport], seconds: float, as_json: bool
    ) -> None:
        rate = checked / seconds if seconds > 0 else 0.0
        if as_json:
            self._json(
                {
                    "checked": checked,
                    "mismatched": len(mismatched),
                    "seconds": round(seconds, 3),
                    "runs_per_second": round(rate, 1),
                    "mismatches": [r.as_dict() for r in mismatched],
                }
            )
            return
        if mismatched:
            rows = [
                (r.run_id, r.workflow, r.status)
                + (
                    (r.mismatch.position, r.mismatch.reason, r.mismatch.message)
                    if r.mismatch
                    else ()
                )
                for r in mismatched
            ]
            headers = ("run", "workflow", "status", "position", "reason", "message")
            self.stdout.write(table(headers, rows), ending="")
        summary = f"{checked} runs replayed in {seconds:.2f} s, {len(mismatched)} mismatched.\n"
        style = self.style.ERROR if mismatched else self.style.SUCCESS
        self.stdout.write(style(summary), ending="")

    def _summary(self, run: Run, forks: list[str]) -> None:
        lines = [
            f"run       {run.id}",
            f"workflow  {run.workflow}",
            f"status    {run.status}",
            f"input     {json.dumps(run.input, sort_keys=True)}",
            f"created   {_when(run.created_at)}",
            f"finished  {_when(run.finished_at)}",
        ]
        if run.status == RunStatus.COMPLETED:
            lines.append(f"result    {json.dumps(run.result, sort_keys=True)}")
        if run.error:
            lines.append(f"error     {_error_text(run.error)}")
        if run.forked_from_id:
            lines.append(f"forked    from {run.forked_from_id} at {run.forked_from_position}")
        if forks:
            lines.append(f"forks     {', '.join(forks)}")
        self.stdout.write("\n".join(lines) + "\n")

    def _err(self, text: str) -> None:
        self.stderr.write(text, ending="")
        self.stderr.flush()

    def _json(self, value: Any) -> None:
        self.stdout.write(json.dumps(value, indent=2, sort_keys=True, default=str))


def _json_argument(text: str, what: str) -> Any:
    """A command-line argument decoded as strict JSON; CommandError (code "invalid") if not."""
    try:
        return json.loads(text, parse_constant=_no_constant)
    except ValueError as exc:
        raise CommandError(f"invalid: {what} is not valid JSON: {exc}") from None
    except RecursionError:
        raise CommandError(f"invalid: {what} is nested too deeply") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _when(moment: Any) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S") if moment else "—"


def _error_text(error: Any) -> str:
    if not error:
        return ""
    if isinstance(error, dict):
        return f"{error.get('type', 'Error')}: {error.get('message', '')}"
    return str(error)


def _step_record(step: Step) -> dict[str, Any]:
    error = dict(step.error) if isinstance(step.error, dict) else step.error
    if isinstance(error, dict):
        error.pop("traceback", None)
    return {
        "position": step.position,
        "name": step.name,
        "kind": step.kind,
        "status": step.status,
        "attempt": step.attempt,
        "result": step.result,
        "error": error,
    }
