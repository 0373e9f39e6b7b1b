"""Search attributes in the run admin: a list filter by the chosen workflow's attributes, one by
Django task path, the search box's `NAME[__OP]=VALUE` terms and attribute values, and the run
page's attributes with their history (the `run_created` values and each `search_set`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib import admin
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from runtime.admin.display import pretty_json, timestamp
from runtime.core.errors import InvalidArguments
from runtime.core.search import conditions
from runtime.django_tasks.run_view import TASK_ATTRIBUTE
from runtime.models import Event, EventType, Run
from runtime.registry import registry
from runtime.run_queries import of_task as run_query_of_task
from runtime.store.runs.search_rows import attributes_of, matching, text_values, value_matching

RECENT_RUNS = 500  # the runs whose values the filter offers (the newest of the workflow)
VALUES_SHOWN = 8  # per attribute
TASK_PATHS_SHOWN = 100  # paths the Django task filter offers (a path typed in ?task= works too)


def _declared(workflow: str | None) -> dict[str, str]:
    found = registry.workflows.get(workflow or "")
    return dict(found.search) if found is not None else {}


class SearchAttributeFilter(admin.SimpleListFilter):
    """Once a workflow is chosen: its attributes' recent values, `name=value` each."""

    title = "search attribute"
    parameter_name = "search"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        workflow = request.GET.get("workflow__exact") or request.GET.get("workflow")
        declared = _declared(workflow)
        if not declared:
            return []
        recent = Run.objects.filter(workflow=workflow).order_by("-created_at")[:RECENT_RUNS]
        values = attributes_of(recent.values_list("id", flat=True))
        choices: list[tuple[str, str]] = []
        for name in sorted(declared):
            seen = sorted(
                {str(v) for found in values.values() if (v := found.get(name)) is not None}
            )
            choices += [(f"{name}={v}", f"{name} = {v}") for v in seen[:VALUES_SHOWN]]
        return choices

    def queryset(self, request: HttpRequest, queryset: QuerySet[Run]) -> QuerySet[Run]:
        term = self.value()
        return queryset if not term else by_terms(request, queryset, [term]) or queryset.none()


class TaskFilter(admin.SimpleListFilter):
    """Django tasks by path (the first TASK_PATHS_SHOWN in order, read off the attribute's
    index); a choice lists that task's runs by their `task` attribute, as `?task=` does."""

    title = "Django task"
    parameter_name = "task"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(path, path) for path in text_values(TASK_ATTRIBUTE, TASK_PATHS_SHOWN)]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Run]) -> QuerySet[Run]:
        path = self.value()
        if not path:
            return queryset
        try:
            return run_query_of_task(queryset, path)
        except InvalidArguments:  # a path no task can have (too long): nothing matches
            return queryset.none()


def by_terms(request: HttpRequest, runs: QuerySet[Run], terms: list[str]) -> QuerySet[Run] | None:
    """`runs` narrowed by `NAME[__OP]=VALUE` terms (None if one cannot be used), typed by the
    chosen workflow's declaration, else by every workflow's."""
    workflow = request.GET.get("workflow__exact") or request.GET.get("workflow")
    declarations: list[Mapping[str, str]] = (
        [_declared(workflow)] if workflow else [wf.search for wf in registry.workflows.values()]
    )
    filters = dict(term.split("=", 1) for term in terms)
    try:
        return matching(runs, conditions(filters, declarations, text=True))
    except InvalidArguments:
        return None


def value_matches(term: str) -> Q:
    """Runs with an attribute whose value is `term` (a str, or the number it reads as)."""
    try:
        number: float | None = float(term)
    except ValueError:
        number = None
    return Q(id__in=value_matching(term, number))


def attributes_html(run: Run) -> SafeString:
    """The run's attributes now, and each change with when and where it was made."""
    now = attributes_of([run.id]).get(run.id, {})
    if not now:
        return format_html("<em>{}</em>", "no search attributes")
    current = format_html_join("", "<tr><th>{}</th><td><code>{}</code></td></tr>",
                               ((k, v) for k, v in sorted(now.items())))  # fmt: skip
    changes = Event.objects.filter(
        run_id=run.id, type__in=[EventType.RUN_CREATED, EventType.SEARCH_SET]
    ).order_by("seq")
    rows = [
        (e.seq, e.type, timestamp(e.created_at), pretty_json(e.payload.get("search")))
        for e in changes
        if isinstance(e.payload, dict) and e.payload.get("search")
    ]
    row = "<tr><td>{}</td><td>{}</td><td>{}</td><td><pre>{}</pre></td></tr>"
    history = format_html_join("", row, rows)
    return format_html(
        "<table class='fanfold-search'>{}</table><p>History</p>"
        "<table class='fanfold-search-history'><tr><th>seq</th><th>event</th><th>at</th>"
        "<th>values</th></tr>{}</table>",
        current,
        history,
    )
