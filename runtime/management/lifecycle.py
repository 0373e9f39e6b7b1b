"""The data lifecycle's subcommands of `manage.py fanfold`: purge, restore, rekey.

fanfold purge --older-than 30d [--dry-run] [--archive]   delete finished runs, in batches
fanfold restore RUN                                      bring an archived run back
fanfold rekey                                            re-encrypt payloads, first key
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from django.core.management.base import CommandError, OutputWrapper

from runtime import conf
from runtime.core.durations import parse_duration
from runtime.core.identity import parse_uuid
from runtime.lifecycle.archive import restore
from runtime.lifecycle.rekey import rekey_all
from runtime.lifecycle.retention import DEFAULT_PACE, candidates, older_than, purge


def add_parsers(sub: Any) -> list[argparse.ArgumentParser]:
    """Add the lifecycle subcommands to `fanfold`'s subparsers; returns them."""
    purge_ = sub.add_parser("purge", help="delete finished runs older than a duration")
    purge_.add_argument(
        "--older-than", required=True, type=parse_duration, help="e.g. 30d, 12h, 90s"
    )
    purge_.add_argument("--dry-run", action="store_true", help="count, delete nothing")
    purge_.add_argument(
        "--pace",
        type=_pace,
        default=DEFAULT_PACE,
        help="rest this many times each batch's time after it, so running workflows keep "
        f"their commit rate (default {DEFAULT_PACE}; 0: no rest)",
    )
    purge_.add_argument(
        "--archive",
        action="store_true",
        help='write each run to STORAGES["fanfold_archive"] first (also FANFOLD_ARCHIVE)',
    )
    restore_ = sub.add_parser("restore", help="bring an archived run back")
    restore_.add_argument("run")
    rekey_ = sub.add_parser("rekey", help="re-encrypt stored payloads with the first key")
    return [purge_, restore_, rekey_]


def _pace(text: str) -> float:
    try:
        pace = float(text)
    except ValueError:
        pace = -1.0
    if not 0 <= pace <= 10:  # also NaN
        raise argparse.ArgumentTypeError(f"must be a number from 0 to 10, got {text!r}")
    return pace


def actions(stdout: OutputWrapper) -> dict[str, Callable[[dict[str, Any]], None]]:
    """The subcommands by name, writing to `stdout`."""

    def out(options: dict[str, Any], record: dict[str, Any], text: str) -> None:
        stdout.write(json.dumps(record) if options.get("json") else text)

    def do_purge(options: dict[str, Any]) -> None:
        rule = older_than(options["older_than"])
        if options["dry_run"]:
            n = candidates(rule).count()
            out(options, {"runs": n, "dry_run": True}, f"{n} finished runs would be deleted")
            return
        archive = options["archive"] or conf.get().ARCHIVE
        report = purge(rule, archive=archive, pace=options["pace"])
        record = {
            "runs": report.runs,
            "archived": report.archived,
            "rows": report.rows,
            "batches": report.batches,
        }
        out(options, record, f"deleted {report.runs} runs ({report.archived} archived)")

    def do_restore(options: dict[str, Any]) -> None:
        run_id = parse_uuid(options["run"])
        if run_id is None:
            raise CommandError(f"invalid: {options['run']!r} is not a run id")
        run = restore(run_id)
        out(options, {"id": str(run.id), "status": run.status}, f"restored run {run.id}")

    def do_rekey(options: dict[str, Any]) -> None:
        report = rekey_all()
        record = {
            "read": report.read,
            "rewritten": report.rewritten,
            "skipped": report.skipped,
            "files_deleted": report.files_deleted,
        }
        total = sum(report.rewritten.values())
        out(options, record, f"re-encrypted {total} payloads ({report.read} rows read)")

    return {"purge": do_purge, "restore": do_restore, "rekey": do_rekey}
