"""The Django admin for inspecting runs: read-only, with cancel and re-run actions.

A run may have tens of thousands of steps and events, so its page never renders them all: both
tables are paginated (`?steps_page=N`, `?events_page=N`) and headed by counts per status.
The changelist counts steps with one correlated subquery per column, evaluated only for the
rows of the page shown, rather than a join that would aggregate every run's steps.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.core.paginator import Page, Paginator
from django.db.models import Count, IntegerField, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from runtime.admin_display import (
    _as_uuid,
    _compact,
    _error_summary,
    _runs,
    _timestamp,
    pretty_json,
    relative_time,
    seconds_between,
)
from runtime.admin_forks import RunForkAdmin
from runtime.admin_pages import RunPagesMixin
from runtime.core.errors import FanfoldError, RunAlreadyFinished, RunNotFound
from runtime.flow import admin as flow_admin  # noqa: F401  (schedules, slots pages)
from runtime.models import Event, Run, RunStatus, Step, StepStatus
from runtime.services import cancel_run, start_run

STEPS_PER_PAGE = 100
EVENTS_PER_PAGE = 100


def _step_count(status: str | None = None) -> Coalesce:
    steps = Step.objects.filter(run=OuterRef("pk"))
    if status is not None:
        steps = steps.filter(status=status)
    counted = steps.order_by().values("run").annotate(n=Count("pk")).values("n")
    return Coalesce(Subquery(counted, output_field=IntegerField()), 0)


def _page(request: HttpRequest, param: str, items: Any, per_page: int) -> Page[Any]:
    return Paginator(items, per_page).get_page(request.GET.get(param))


def _pager(request: HttpRequest, param: str, page: Page[Any], anchor: str) -> dict[str, Any]:
    """What the pager under a table shows: the range on view and links to other pages."""

    def link(number: int) -> str:
        query = request.GET.copy()
        query[param] = str(number)
        return f"?{query.urlencode()}#{anchor}"

    last = page.paginator.num_pages
    return {
        "page": page,
        "first": link(1) if page.number > 1 else None,
        "previous": link(page.number - 1) if page.has_previous() else None,
        "next": link(page.number + 1) if page.has_next() else None,
        "last": link(last) if page.number < last else None,
    }


@admin.register(Run)
class RunAdmin(RunPagesMixin, RunForkAdmin):
    change_form_template = "admin/runtime/run/change_form.html"
    list_display = [
        "short_id",
        "workflow",
        "status",
        "created",
        "duration",
        "step_counts",
    ]
    list_filter = ["status", "workflow"]
    # Searching is done by get_search_results; this only turns the search box on.
    search_fields = ["=idempotency_key"]
    search_help_text = "An exact run id or idempotency key."
    show_full_result_count = False
    list_per_page = 50
    actions = ["cancel_runs", "rerun_runs", "retry_runs"]
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "id",
                    "workflow",
                    "status",
                    "idempotency_key",
                    ("created_at", "started_at", "finished_at"),
                    "duration",
                    "fork_links",
                ]
            },
        ),
        ("Input and outcome", {"fields": ["input_json", "outcome"]}),
    ]
    readonly_fields = [
        "id",
        "workflow",
        "status",
        "idempotency_key",
        "created_at",
        "started_at",
        "finished_at",
        "duration",
        "input_json",
        "outcome",
        "fork_links",
    ]

    # --- permissions: staff may look and act, nobody edits rows by hand ---------------------

    def has_view_permission(self, request: HttpRequest, obj: Run | None = None) -> bool:
        return bool(request.user.is_active and request.user.is_staff)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self.has_view_permission(request)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Run | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Run | None = None) -> bool:
        return False

    # --- the changelist --------------------------------------------------------------------

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        # PostgreSQL text cannot hold NUL: a filter value with one would fail the query.
        if any("\x00" in value for _, values in request.GET.lists() for value in values):
            return HttpResponseBadRequest("Filter and search values cannot contain NUL (U+0000).")
        return super().changelist_view(request, extra_context)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Run]:
        queryset = super().get_queryset(request)
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
        condition = Q(idempotency_key=term)
        run_id = _as_uuid(term)
        if run_id is not None:
            condition |= Q(id=run_id)
        return queryset.filter(condition), False

    @admin.display(description="Run", ordering="id")
    def short_id(self, run: Run) -> SafeString:
        return format_html("<code title='{}'>{}…</code>", run.id, str(run.id)[:8])

    @admin.display(description="Created", ordering="created_at")
    def created(self, run: Run) -> str:
        return _timestamp(run.created_at)

    @admin.display(description="Duration")
    def duration(self, run: Run) -> str:
        return seconds_between(run.started_at or run.created_at, run.finished_at)

    @admin.display(description="Steps")
    def step_counts(self, run: Run) -> str:
        total = getattr(run, "steps_total", None)
        if total is None:
            return "—"
        parts = [str(total)]
        if run.steps_completed:  # type: ignore[attr-defined]
            parts.append(f"{run.steps_completed} completed")  # type: ignore[attr-defined]
        if run.steps_failed:  # type: ignore[attr-defined]
            parts.append(f"{run.steps_failed} failed")  # type: ignore[attr-defined]
        return " · ".join(parts)

    # --- the run's page ----------------------------------------------------------------------

    @admin.display(description="Input")
    def input_json(self, run: Run) -> SafeString:
        return format_html("<pre class='fanfold-json'>{}</pre>", pretty_json(run.input))

    @admin.display(description="Result or error")
    def outcome(self, run: Run) -> SafeString:
        if run.error is not None:
            error = dict(run.error) if isinstance(run.error, dict) else {"message": run.error}
            traceback = error.pop("traceback", "")
            summary = f"{error.get('type', 'Error')}: {error.get('message', '')}"
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

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        run = self.get_object(request, object_id)
        context = dict(extra_context or {})
        if run is not None and self.has_view_permission(request, run):
            context.update(self._history_context(request, run))
        return super().change_view(request, object_id, form_url, context)

    def _history_context(self, request: HttpRequest, run: Run) -> dict[str, Any]:
        return {
            **_steps_context(request, run),
            **_events_context(request, run),
            **self.fork_context(run),
        }

    # --- actions -----------------------------------------------------------------------------

    @admin.action(description="Cancel selected runs")
    def cancel_runs(self, request: HttpRequest, queryset: QuerySet[Run]) -> None:
        cancelled, finished = 0, []
        for run in queryset.only("id"):
            try:
                cancel_run(run.id, reason="cancelled from the admin")
            except (RunAlreadyFinished, RunNotFound):
                finished.append(str(run.id))
            except FanfoldError as exc:  # a failed checkpoint write: say so, try the next run
                self.message_user(request, f"Could not cancel {run.id}: {exc}", messages.ERROR)
            else:
                cancelled += 1
        if cancelled:
            self.message_user(request, f"Cancelled {_runs(cancelled)}.", messages.SUCCESS)
        if finished:
            self.message_user(
                request,
                f"{_runs(len(finished))} had already finished and stayed as they were: "
                + ", ".join(finished),
                messages.WARNING,
            )

    @admin.action(description="Re-run selected runs (same workflow and input)")
    def rerun_runs(self, request: HttpRequest, queryset: QuerySet[Run]) -> None:
        started: list[tuple[Run, Run]] = []
        for run in queryset.only("id", "workflow", "input"):
            try:
                new, _ = start_run(run.workflow, run.args, run.kwargs)
            except (FanfoldError, ValueError, TypeError) as exc:
                self.message_user(request, f"Could not re-run {run.id}: {exc}", messages.ERROR)
            else:
                started.append((run, new))
        if started:
            links = format_html_join(
                ", ",
                "<a href='{}'>{}</a> (from {})",
                (
                    (reverse("admin:runtime_run_change", args=[new.pk]), new.pk, old.pk)
                    for old, new in started
                ),
            )
            self.message_user(
                request, format_html("Started {}: {}", _runs(len(started)), links), messages.SUCCESS
            )


_STEP_LIST_FIELDS = (
    "position",
    "name",
    "kind",
    "status",
    "attempt",
    "error",
    "started_at",
    "finished_at",
    "run_id",
)


def _steps_context(request: HttpRequest, run: Run) -> dict[str, Any]:
    """The run page's step counts and its page of the step table."""
    by_status = dict(
        Step.objects.filter(run=run)
        .order_by()
        .values_list("status")
        .annotate(n=Count("pk"))
        .values_list("status", "n")
    )
    rows = Step.objects.filter(run=run).order_by("position").only(*_STEP_LIST_FIELDS)
    steps = _page(request, "steps_page", rows, STEPS_PER_PAGE)
    return {
        "step_status_counts": [
            (label, by_status[value]) for value, label in StepStatus.choices if value in by_status
        ],
        "step_total": sum(by_status.values()),
        "steps_pager": _pager(request, "steps_page", steps, "steps"),
        "step_rows": [
            {
                "step": step,
                "duration": seconds_between(step.started_at, step.finished_at),
                "error": _error_summary(step.error),
            }
            for step in steps
        ],
    }


def _events_context(request: HttpRequest, run: Run) -> dict[str, Any]:
    """The run page's page of the event log."""
    rows = (
        Event.objects.filter(run=run)
        .order_by("seq")
        .select_related("step")
        .only("seq", "type", "payload", "created_at", "run_id", "step__name", "step__position")
    )
    events = _page(request, "events_page", rows, EVENTS_PER_PAGE)
    return {
        "events_pager": _pager(request, "events_page", events, "timeline"),
        "event_rows": [
            {
                "event": event,
                "offset": relative_time(run.created_at, event.created_at),
                "payload": _compact(event.payload),
            }
            for event in events
        ],
    }
