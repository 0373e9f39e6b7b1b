"""Run queries: the filters of `runtime.list_runs`, `GET /api/runs/`, `fanfold runs` and the
MCP server's `list_runs`, built once here into one queryset, newest first.

Filters: `workflow`, `status` (one or several), `search` ({"customer": 42, "amount__gte": 100},
runtime.core.search), created / started / finished after and before, `owner`, `parent` (the
children of a run), `forked_from`, `task` (the runs of a plain Django task, by its path: their
`task` attribute) and `app_version` (the deployment version a run is pinned to). With
`text=True` values may come as query-string text (REST, the CLI): "running,waiting", ISO 8601
times, "42". A filter that cannot be used raises InvalidFilter naming it.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.db.models import QuerySet
from django.utils.dateparse import parse_datetime

from runtime.access import visible_runs
from runtime.core.errors import InvalidArguments
from runtime.core.identity import child_run_key_prefix, parse_uuid
from runtime.core.search import InvalidFilter, condition, conditions
from runtime.django_tasks.run_view import TASK_ATTRIBUTE, TASK_WORKFLOW
from runtime.handles import RunHandle
from runtime.models import Run, RunStatus, values
from runtime.registry import registry
from runtime.selectors import every_run, lagging_reads
from runtime.store.runs.search_rows import matching

TIME_FILTERS = {
    "created_after": "created_at__gte",
    "created_before": "created_at__lt",
    "started_after": "started_at__gte",
    "started_before": "started_at__lt",
    "finished_after": "finished_at__gte",
    "finished_before": "finished_at__lt",
}
MAX_STATUSES = len(RunStatus)
MAX_VERSION = Run._meta.get_field("app_version").max_length or 64


def _statuses(status: object) -> list[str]:
    items = status.split(",") if isinstance(status, str) else status
    known = values(RunStatus)
    if not isinstance(items, list | tuple) or not 1 <= len(items) <= MAX_STATUSES:
        raise InvalidFilter("status takes one status or a list of them", "status")
    for item in items:
        if item not in known:
            shown = str(item)[:40]
            raise InvalidFilter(f"unknown status {shown!r}; one of {', '.join(known)}", "status")
    return list(items)


def _moment(name: str, value: object) -> datetime:
    if isinstance(value, str):
        parsed = parse_datetime(value.strip())
        if parsed is None:
            raise InvalidFilter(f"{name} takes an ISO 8601 time, not {value[:40]!r}", name)
        value = parsed
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise InvalidFilter(f"{name} takes a time with a time zone", name)
    return value


def _run_id(name: str, value: object) -> uuid.UUID:
    parsed = parse_uuid(value)
    if parsed is None:
        raise InvalidFilter(f"{name} takes a run id, not {str(value)[:40]!r}", name)
    return parsed


def _owner_id(value: object) -> int:
    if hasattr(value, "pk"):
        value = value.pk
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidFilter(f"owner takes a user id, not {str(value)[:40]!r}", "owner")
    return value


def _declarations(workflow: str | None) -> list[Mapping[str, str]]:
    if workflow is not None:
        found = registry.workflows.get(workflow)
        return [found.search] if found is not None else []
    return [wf.search for wf in registry.workflows.values()]


def of_task(runs: QuerySet[Run], path: object) -> QuerySet[Run]:
    """The runs of the plain Django task at `path`: its runs' `task` attribute (indexed)."""
    if not isinstance(path, str) or not path:
        raise InvalidFilter("task takes a task's dotted path", "task")
    try:
        found = condition(TASK_ATTRIBUTE, "str", path)
    except InvalidArguments as exc:
        raise InvalidFilter(str(exc), "task") from None
    return matching(runs.filter(workflow=TASK_WORKFLOW), [found])


def run_query(
    *,
    workflow: str | None = None,
    status: str | list[str] | None = None,
    search: Mapping[str, Any] | None = None,
    owner: Any = None,
    parent: uuid.UUID | str | None = None,
    forked_from: uuid.UUID | str | None = None,
    task: str | None = None,
    app_version: str | None = None,
    text: bool = False,
    **times: Any,
) -> QuerySet[Run]:
    """The runs that meet every filter given, newest first (see the module's docstring)."""
    runs = every_run()
    if task is not None:
        runs = of_task(runs, task)
    if app_version is not None:
        if not isinstance(app_version, str) or len(app_version) > MAX_VERSION:
            raise InvalidFilter(f"app_version takes a version of at most {MAX_VERSION} "
                                "characters", "app_version")  # fmt: skip
        runs = runs.filter(app_version=app_version)
    if workflow is not None:
        if not isinstance(workflow, str) or not workflow:
            raise InvalidFilter("workflow takes a workflow name", "workflow")
        runs = runs.filter(workflow=workflow)
    if status is not None:
        chosen = _statuses(status)
        runs = runs.filter(status=chosen[0]) if len(chosen) == 1 else runs.filter(status__in=chosen)
    for name, value in times.items():
        if name not in TIME_FILTERS:
            raise InvalidFilter(f"unknown filter {name!r}", name)
        if value is not None:
            runs = runs.filter(**{TIME_FILTERS[name]: _moment(name, value)})
    if owner is not None:
        runs = runs.filter(owner_id=_owner_id(owner))
    if parent is not None:
        prefix = child_run_key_prefix(_run_id("parent", parent))
        runs = runs.filter(idempotency_key__startswith=prefix)
    if forked_from is not None:
        runs = runs.filter(forked_from_id=_run_id("forked_from", forked_from))
    if search:
        if not isinstance(search, Mapping):
            raise InvalidFilter("search takes a dict of attribute filters", "search")
        runs = matching(runs, conditions(search, _declarations(workflow), text=text))
    return runs.order_by("-created_at", "-id")


def list_runs(
    *,
    workflow: str | None = None,
    status: str | list[str] | None = None,
    search: Mapping[str, Any] | None = None,
    owner: Any = None,
    parent: uuid.UUID | str | None = None,
    forked_from: uuid.UUID | str | None = None,
    task: str | None = None,
    app_version: str | None = None,
    user: Any = None,
    limit: int = 50,
    **times: Any,
) -> list[RunHandle]:
    """Handles to the newest `limit` runs that meet every filter, newest first.

    `search={"customer": 42, "amount__gte": 100, "region__in": ["eu"]}` filters by search
    attributes (operators `__gte`, `__lte`, `__in`, `__contains`); `created_after`,
    `created_before`, `started_after`, `started_before`, `finished_after`, `finished_before`
    take aware datetimes; `task="app.tasks.send_mail"` the runs of that plain Django task;
    `app_version` the runs pinned to that deployment version. With `user` only the runs that
    user may see (as the API shows them); without, every run (Python callers act as the
    operator). InvalidFilter names a filter that cannot be used.
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
        raise InvalidFilter("limit takes 1 to 1000", "limit")
    runs = run_query(workflow=workflow, status=status, search=search, owner=owner,
                     parent=parent, forked_from=forked_from, task=task,
                     app_version=app_version, **times)  # fmt: skip
    if user is not None:
        runs = visible_runs(user, runs)
    with lagging_reads():
        found = list(runs.values_list("id", flat=True)[:limit])
    return [RunHandle(rid, created=False) for rid in found]
