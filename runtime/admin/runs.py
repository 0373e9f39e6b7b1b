"""The Django admin for inspecting runs: read-only, with cancel, re-run, retry and fork.

Beyond Django's list and change form, the run admin serves two pages of its own (added in
`get_urls`): a workflow's page of counts and durations, and the target of the fork form.
The changelist counts steps with one correlated subquery per column, evaluated only for the
rows of the page shown, rather than a join that would aggregate every run's steps.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db.models import OuterRef, Q, QuerySet
from django.db.models.functions import Coalesce
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponseNotAllowed,
)
from django.shortcuts import render
from django.urls import URLPattern, path
from django.utils.html import format_html
from django.utils.safestring import SafeString

from runtime.access import can_change, can_see, sees_every_run, visible_runs
from runtime.admin.actions import cancel_runs, rerun_runs, retry_runs
from runtime.admin.approvals import approvals_context, decide_from_form
from runtime.admin.base import ReadOnlyAdmin, count_subquery, rendered
from runtime.admin.display import (
    error_summary,
    pretty_json,
)
from runtime.admin.forks import fork_from_form, source_and_fork_links
from runtime.admin.run_columns import RunListColumns
from runtime.admin.run_pages import run_page_context
from runtime.admin.search import (
    SearchAttributeFilter,
    TaskFilter,
    attributes_html,
    by_terms,
    value_matches,
)
from runtime.admin.versions import versions_page
from runtime.admin.workflows import workflow_stats
from runtime.core.identity import parse_uuid
from runtime.django_tasks.run_view import task_run_view
from runtime.models import Run, RunStatus, Step, StepStatus
from runtime.selectors import lagging_reads

# PostgreSQL text cannot hold NUL: a query with one fails instead of finding nothing.
NUL = "\x00"


def _step_count(status: str | None = None) -> Coalesce:
    steps = Step.objects.filter(run=OuterRef("pk"))
    if status is not None:
        steps = steps.filter(status=status)
    return count_subquery(steps, "run")


@admin.register(Run)
class RunAdmin(RunListColumns, ReadOnlyAdmin[Run]):
    change_form_template = "admin/runtime/run/change_form.html"
    list_display = [
        "short_id", "workflow_name", "status", "owner", "created", "duration", "step_counts",
    ]  # fmt: skip
    list_select_related = ["owner"]
    list_filter = ["status", "workflow", TaskFilter, SearchAttributeFilter]
    # Searching is done by get_search_results; this only turns the search box on.
    search_fields = ["=idempotency_key"]
    search_help_text = (
        "An exact run id, idempotency key or attribute value; or NAME[__OP]=VALUE terms "
        "(customer=42 amount__gte=100)."
    )
    show_full_result_count = False
    list_per_page = 50
    actions = [cancel_runs, rerun_runs, retry_runs]
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "id",
                    "workflow",
                    "status",
                    "app_version",
                    "owner",
                    "idempotency_key",
                    ("created_at", "started_at", "finished_at"),
                    "duration",
                    "fork_links",
                ]
            },
        ),
        ("Input and outcome", {"fields": ["input_json", "outcome"]}),
        ("Search attributes", {"fields": ["search_attributes"]}),
    ]
    readonly_fields = [
        "id",
        "workflow",
        "status",
        "app_version",
        "owner",
        "idempotency_key",
        "created_at",
        "started_at",
        "finished_at",
        "duration",
        "input_json",
        "outcome",
        "fork_links",
        "search_attributes",
    ]

    # --- who sees what (runtime.access): owners their runs, view_run every run --------------

    def has_module_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.is_active and request.user.is_staff)

    def has_view_permission(self, request: HttpRequest, obj: Run | None = None) -> bool:
        """Staff may open the list (which shows only the runs they may see) and the pages of
        those runs."""
        if not self.has_module_permission(request):
            return False
        return obj is None or can_see(request.user, obj)

    # --- pages of its own --------------------------------------------------------------------

    def get_urls(self) -> list[URLPattern]:
        own = [
            path(
                "versions/",
                self.admin_site.admin_view(self.versions_view),
                name="runtime_run_versions",
            ),
            path(
                "workflow/<path:name>/",
                self.admin_site.admin_view(self.workflow_view),
                name="runtime_run_workflow",
            ),
            path(
                "<path:object_id>/fork/",
                self.admin_site.admin_view(self.fork_view),
                name="runtime_run_fork",
            ),
            path(
                "<path:object_id>/approvals/<str:approval_id>/",
                self.admin_site.admin_view(self.approval_view),
                name="runtime_run_approval",
            ),
        ]
        return own + super().get_urls()

    def workflow_view(self, request: HttpRequest, name: str) -> HttpResponse:
        """Counts by status and p50/p95 durations of the workflow's recent runs and steps:
        every user's runs, so for those who may see every run."""
        if not (self.has_module_permission(request) and sees_every_run(request.user)):
            return HttpResponse(status=403)
        if NUL in name:
            raise Http404("No workflow name contains NUL (U+0000).")
        context = {
            **self.admin_site.each_context(request),
            "title": f"Workflow {name}",
            "opts": Run._meta,
            "stats": workflow_stats(name),
        }
        return render(request, "admin/runtime/run/workflow.html", context)

    def versions_view(self, request: HttpRequest) -> HttpResponse:
        """The deployment versions page (runtime.admin.versions): staff or upgrade_version."""
        return versions_page(self, request)

    def fork_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """POST `position`: fork the run from it, then show the new run (or say what failed)."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        run = self.get_object(request, object_id) if self.has_module_permission(request) else None
        if run is None:
            raise Http404("No such run.")  # or one this user may not see: the same answer
        if not can_change(request.user, run):
            raise PermissionDenied
        return fork_from_form(self, request, object_id)

    def approval_view(self, request: HttpRequest, object_id: str, approval_id: str) -> HttpResponse:
        """POST `decision` (approve or deny) and `reason`: decide one of the run's approvals."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        run = self.get_object(request, object_id) if self.has_module_permission(request) else None
        if run is None or not can_see(request.user, run):
            raise Http404("No such run.")
        if not can_change(request.user, run):
            raise PermissionDenied
        return decide_from_form(self, request, run, approval_id)

    # --- the changelist ----------------------------------------------------------------------

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        if any(NUL in value for _, values in request.GET.lists() for value in values):
            return HttpResponseBadRequest("Filter and search values cannot contain NUL (U+0000).")
        if request.method != "GET":  # an action: it decides on what the primary holds
            return super().changelist_view(request, extra_context)
        with lagging_reads():  # the template reads the page's runs: render it in the block
            return rendered(super().changelist_view(request, extra_context))

    def get_queryset(self, request: HttpRequest) -> QuerySet[Run]:
        queryset = visible_runs(request.user, super().get_queryset(request))
        # Only the list shows these counts; the run page counts its steps by status itself.
        if request.resolver_match and request.resolver_match.url_name == "runtime_run_changelist":
            queryset = queryset.annotate(
                steps_total=_step_count(),
                steps_completed=_step_count(StepStatus.COMPLETED),
                steps_failed=_step_count(StepStatus.FAILED),
            )
        return queryset

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Run], search_term: str
    ) -> tuple[QuerySet[Run], bool]:
        """Exact matches only: a run id (when the term parses as a UUID) or idempotency key.

        The term is parsed here rather than handed to the database, so a UUID column on
        Postgres never sees a string it cannot cast.
        """
        term = search_term.strip()
        if not term:
            return queryset, False
        if "=" in term:  # attribute terms: customer=42 amount__gte=100
            found = by_terms(request, queryset, term.split())
            return (found if found is not None else queryset.none()), False
        condition = Q(idempotency_key=term) | value_matches(term)
        run_id = parse_uuid(term)
        if run_id is not None:
            condition |= Q(id=run_id)
        return queryset.filter(condition), False

    # --- the run's page ----------------------------------------------------------------------

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        run = self.get_object(request, object_id)
        context = dict(extra_context or {})
        if run is None or request.method != "GET":
            return super().change_view(request, object_id, form_url, context)
        with lagging_reads(fresh_as=run):
            if self.has_view_permission(request, run):
                context.update(run_page_context(request, run))
                context.update(approvals_context(run))
            return rendered(super().change_view(request, object_id, form_url, context))

    @admin.display(description="Input")
    def input_json(self, run: Run) -> SafeString:
        task = task_run_view(run.workflow, run.input)
        if task is None:
            return format_html("<pre class='fanfold-json'>{}</pre>", pretty_json(run.input))
        return format_html(
            "<pre class='fanfold-json'>{}</pre><details><summary>Task {}: its envelope</summary>"
            "<pre class='fanfold-json'>{}</pre></details>",
            pretty_json(task.arguments), task.path, pretty_json(task.envelope),
        )  # fmt: skip

    @admin.display(description="Result or error")
    def outcome(self, run: Run) -> SafeString:
        if run.error is not None:
            error = dict(run.error) if isinstance(run.error, dict) else {"message": run.error}
            summary = error_summary(error)
            traceback = error.pop("traceback", "")
            return format_html(
                "<p class='fanfold-error'><strong>{}</strong></p>"
                "<pre class='fanfold-json'>{}</pre><pre class='fanfold-traceback'>{}</pre>",
                summary,
                pretty_json(error),
                traceback or "(no traceback recorded)",
            )
        if run.status == RunStatus.COMPLETED:
            return format_html("<pre class='fanfold-json'>{}</pre>", pretty_json(run.result))
        return format_html("<em>{}</em>", f"none yet: the run is {run.status}")

    @admin.display(description="Attributes")
    def search_attributes(self, run: Run) -> SafeString:
        return attributes_html(run)

    @admin.display(description="Fork links")
    def fork_links(self, run: Run) -> SafeString:
        return source_and_fork_links(run)
