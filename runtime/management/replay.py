"""The replay check's subcommand of `manage.py fanfold`.

fanfold replay [--workflow W] [--status S] [--limit N] [--run RUN]
    replays recorded histories against the current code without running any step body and
    lists the runs whose history the code no longer matches; exit status 1 if any
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import Any

from django.core.management.base import OutputWrapper
from django.core.management.color import Style

from runtime.management.console import ProgressBar, table
from runtime.management.records import write_json
from runtime.models import RunStatus, values
from runtime.replay_check import ReplayReport, replay_runs
from runtime.selectors import runs_to_replay
from runtime.services import get_run_row


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Add `replay` to `fanfold`'s subparsers; returns it."""
    check = sub.add_parser("replay", help="check recorded histories against the code")
    check.add_argument("--workflow")
    check.add_argument("--status", choices=values(RunStatus), action="append", help="repeatable")
    check.add_argument("--limit", type=int, help="the newest N runs only")
    check.add_argument("--run", action="append", help="this run (repeatable)")
    return check


def action(
    stdout: OutputWrapper, stderr: OutputWrapper, style: Style
) -> Callable[[dict[str, Any]], None]:
    """`replay`: tables and a progress bar (on `stderr`) for people, or JSON."""

    def progress(text: str) -> None:
        stderr.write(text, ending="")
        stderr.flush()

    def do_replay(options: dict[str, Any]) -> None:
        runs = runs_to_replay(
            workflow=options.get("workflow"),
            statuses=options.get("status"),
            run_ids=[get_run_row(r).id for r in options.get("run") or []],
            limit=options.get("limit"),
        )
        bar = None if options["json"] else ProgressBar(progress, runs.count(), "replaying")
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
        seconds = time.monotonic() - started
        if options["json"]:
            write_json(stdout, _record(checked, mismatched, seconds))
        else:
            stdout.write(_text(checked, mismatched, seconds, style), ending="")
        if mismatched:
            sys.exit(1)

    return do_replay


def _record(checked: int, mismatched: list[ReplayReport], seconds: float) -> dict[str, Any]:
    rate = checked / seconds if seconds > 0 else 0.0
    return {
        "checked": checked,
        "mismatched": len(mismatched),
        "seconds": round(seconds, 3),
        "runs_per_second": round(rate, 1),
        "mismatches": [r.as_dict() for r in mismatched],
    }


def _text(checked: int, mismatched: list[ReplayReport], seconds: float, style: Style) -> str:
    text = ""
    if mismatched:
        rows = [
            (r.run_id, r.workflow, r.status)
            + ((r.mismatch.position, r.mismatch.reason, r.mismatch.message) if r.mismatch else ())
            for r in mismatched
        ]
        text = table(("run", "workflow", "status", "position", "reason", "message"), rows)
    summary = f"{checked} runs replayed in {seconds:.2f} s, {len(mismatched)} mismatched.\n"
    return text + (style.ERROR if mismatched else style.SUCCESS)(summary)
