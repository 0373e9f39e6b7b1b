"""The deployment versions subcommands of `manage.py fanfold` (docs/deploying.md).

fanfold versions [--json]                                each version: runs in flight, workers
fanfold versions upgrade FROM [--to V] [--dry-run]       move the runs that replay clean
fanfold versions retire FROM --cancel                    cancel what is left of a version
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from django.core.management.base import CommandError, OutputWrapper

from runtime.access import cli_actor
from runtime.deploy.upgrades import UpgradeResult, retire, upgrade
from runtime.management.console import table
from runtime.management.records import write_json
from runtime.observe.versions import version_rows


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Add `versions` (with `upgrade` and `retire`) to `fanfold`'s subparsers; returns it."""
    versions = sub.add_parser("versions", help="deployment versions: list, upgrade, retire")
    actions = versions.add_subparsers(dest="versions_action", metavar="ACTION")
    up = actions.add_parser("upgrade", help="move the runs of FROM that replay clean here")
    up.add_argument("from_version", metavar="FROM")
    up.add_argument("--to", dest="to_version", help="the version to move them to (this one)")
    up.add_argument("--dry-run", action="store_true", help="check only, move nothing")
    gone = actions.add_parser("retire", help="cancel the runs still in flight on FROM")
    gone.add_argument("from_version", metavar="FROM")
    gone.add_argument("--cancel", action="store_true", required=True, help="cancel them")
    for each in (up, gone):
        each.add_argument("--json", action="store_true", help="JSON output")
    return versions


def action(stdout: OutputWrapper) -> Callable[[dict[str, Any]], None]:
    """`versions`: a table for people, or JSON."""

    def do_versions(options: dict[str, Any]) -> None:
        what = options.get("versions_action")
        if what == "upgrade":
            _upgraded(stdout, options)
        elif what == "retire":
            cancelled = retire(options["from_version"], by=cli_actor())
            if options["json"]:
                write_json(stdout, {"cancelled": [str(run_id) for run_id in cancelled]})
            else:
                stdout.write(f"{len(cancelled)} run(s) of {options['from_version']} cancelled\n")
        else:
            _listed(stdout, options)

    return do_versions


def _listed(stdout: OutputWrapper, options: dict[str, Any]) -> None:
    rows = version_rows()
    if options["json"]:
        write_json(stdout, rows)
        return
    headers = ("version", "current", "pending", "running", "waiting", "stranded", "workers")
    cells = [
        (r["version"] or "(none)", "yes" if r["current"] else "", r["pending"], r["running"],
         r["waiting"], r["stranded"], ", ".join(r["workers"]) or "-")
        for r in rows
    ]  # fmt: skip
    stdout.write(table(headers, cells), ending="")


def _upgraded(stdout: OutputWrapper, options: dict[str, Any]) -> None:
    try:
        result = upgrade(
            options["from_version"],
            options.get("to_version"),
            dry_run=options["dry_run"],
            by=cli_actor(),
        )
    except ValueError as exc:
        raise CommandError(str(exc)) from exc
    if options["json"]:
        write_json(stdout, result.as_dict())
    else:
        stdout.write(_text(result), ending="")
    if result.refused:
        sys.exit(1)


def _text(result: UpgradeResult) -> str:
    verb = "would move" if result.dry_run else "moved"
    lines = [
        f"{result.checked} run(s) of {result.from_version} checked; {verb} "
        f"{len(result.moved)} to {result.to_version}; {len(result.refused)} refused; "
        f"{len(result.busy)} busy (leased: try again)\n"
    ]
    if result.refused:
        rows = [
            (r.run_id, r.workflow, r.status, r.mismatch.position if r.mismatch else "",
             r.mismatch.reason if r.mismatch else "", r.mismatch.message if r.mismatch else "")
            for r in result.refused
        ]  # fmt: skip
        lines.append(table(("run", "workflow", "status", "position", "reason", "message"), rows))
    return "".join(lines)
