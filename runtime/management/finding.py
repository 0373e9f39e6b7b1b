"""The run-finding subcommand of `manage.py fanfold`: runs, with filters.

fanfold runs [--workflow W] [--status S[,S]] [--where NAME[__OP]=VALUE ...]
             [--created-after T] [--created-before T] [--finished-after T] [--finished-before T]
             [--owner ID] [--parent RUN] [--forked-from RUN] [--task PATH]
             [--app-version VERSION] [--user NAME] [--limit N]

`--where customer=42 --where amount__gte=100` filters by search attributes (operators
`__gte`, `__lte`, `__in` with comma-separated values, `__contains`); `--user NAME` lists
only what that user may see, as the API would show them.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from django.core.management.base import CommandError, OutputWrapper

from runtime.access import visible_runs
from runtime.core.search import InvalidFilter
from runtime.django_tasks.run_view import task_run_view
from runtime.management.console import table
from runtime.management.records import run_record, when, write_json
from runtime.models import Run
from runtime.run_queries import TIME_FILTERS, run_query
from runtime.selectors import active_user, lagging_reads, search_attributes


def add_parsers(sub: Any) -> list[argparse.ArgumentParser]:
    """Add `runs` to `fanfold`'s subparsers; returns it."""
    runs = sub.add_parser("runs", help="list runs, newest first, by filters")
    runs.add_argument("--workflow")
    runs.add_argument("--status", help="a status or several, comma-separated")
    runs.add_argument(
        "--where",
        action="append",
        default=[],
        metavar="NAME[__OP]=VALUE",
        help="a search attribute filter (repeat for more): customer=42, amount__gte=100, "
        "region__in=eu,us, region__contains=eu",
    )
    for name in TIME_FILTERS:
        runs.add_argument("--" + name.replace("_", "-"), dest=name, metavar="ISO_TIME")
    runs.add_argument("--owner", help="a user id")
    runs.add_argument("--parent", metavar="RUN", help="the child runs of this run")
    runs.add_argument("--forked-from", metavar="RUN", help="the forks of this run")
    runs.add_argument("--task", metavar="PATH", help="the runs of this plain Django task")
    runs.add_argument("--app-version", metavar="VERSION", help="the runs of this version")
    runs.add_argument("--user", metavar="NAME", help="only the runs this user may see")
    runs.add_argument("--limit", type=int, default=50)
    return [runs]


def user_named(name: str) -> Any:
    """The active user `name`; CommandError if there is none."""
    user = active_user(name)
    if user is None:
        raise CommandError(f"no active user {name!r}")
    return user


def where_filters(terms: list[str]) -> dict[str, str]:
    """`--where` terms as search filters; InvalidFilter for one without `=` or given twice."""
    found: dict[str, str] = {}
    for term in terms:
        key, sep, value = term.partition("=")
        if not sep or not key or key in found:
            raise InvalidFilter(f"--where takes NAME[__OP]=VALUE, each once, not {term!r}", term)
        found[key] = value
    return found


def actions(stdout: OutputWrapper) -> dict[str, Callable[[dict[str, Any]], None]]:
    """The subcommands by name, writing to `stdout`."""

    def do_runs(options: dict[str, Any]) -> None:
        times = {name: options.get(name) for name in TIME_FILTERS}
        runs = run_query(
            workflow=options.get("workflow"),
            status=options.get("status"),
            search=where_filters(options["where"]),
            owner=options.get("owner"),
            parent=options.get("parent"),
            forked_from=options.get("forked_from"),
            task=options.get("task"),
            app_version=options.get("app_version"),
            text=True,
            **times,
        )
        if options.get("user"):
            runs = visible_runs(user_named(options["user"]), runs)
        if not 1 <= options["limit"] <= 1000:
            raise InvalidFilter("--limit takes 1 to 1000", "limit")
        with lagging_reads():
            found = list(runs[: options["limit"]])
            search = search_attributes([r.id for r in found])
        if options["json"]:
            rows = [{**run_record(r), "search": search.get(r.id, {})} for r in found]
            write_json(stdout, rows)
            return
        lines = [
            (
                r.id,
                _name(r),
                r.status,
                when(r.created_at),
                when(r.finished_at),
                _shown(search.get(r.id, {})),
            )
            for r in found
        ]
        headers = ("run", "workflow", "status", "created", "finished", "search")
        stdout.write(table(headers, lines), ending="")

    return {"runs": do_runs}


def _name(run: Run) -> str:
    """The workflow's name; a Django task's path (its runs share one workflow), as the admin
    list shows it."""
    task = task_run_view(run.workflow, run.input)
    return f"{task.path} (task)" if task else run.workflow


def _shown(values: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in values.items())
