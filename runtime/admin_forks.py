"""Fork and retry in the run admin: "Fork from this step" on each step of a run's page,
"Retry from the failed step" on the page, and a bulk retry of the runs selected in the list.

All of them go through runtime.forks; the new run's page is linked in the message.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from runtime.core.errors import FanfoldError, NothingToRetry
from runtime.forks import fork_run, retry_run
from runtime.models import Run, Step, StepStatus

# ModelAdmin is generic for the type checker only (no django_stubs_ext monkeypatch at run time).
if TYPE_CHECKING:
    _RunModelAdmin = admin.ModelAdmin[Run]
else:
    _RunModelAdmin = admin.ModelAdmin


def _run_link(run_id: Any) -> SafeString:
    url = reverse("admin:runtime_run_change", args=[run_id])
    return format_html("<a href='{}'>{}</a>", url, run_id)


class RunForkAdmin(_RunModelAdmin):
    """The fork and retry half of the run admin (runtime.admin.RunAdmin derives from it)."""

    def get_urls(self) -> list[URLPattern]:
        fork = path(
            "<path:object_id>/fork/",
            self.admin_site.admin_view(self.fork_view),
            name="runtime_run_fork",
        )
        return [fork, *super().get_urls()]

    def fork_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """POST `position`: fork the run from it, then show the new run (or say what failed)."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not self.has_view_permission(request):
            raise PermissionDenied
        back = reverse("admin:runtime_run_change", args=[object_id])
        try:
            position = int(request.POST.get("position", ""))
        except ValueError:
            self.message_user(request, "Fork from which position? Give a number.", messages.ERROR)
            return HttpResponseRedirect(back)
        try:
            new = fork_run(object_id, position)
        except (FanfoldError, ValueError, TypeError) as exc:
            self.message_user(request, f"Could not fork: {exc}", messages.ERROR)
            return HttpResponseRedirect(back)
        self.message_user(
            request,
            format_html(
                "Forked {} from position {}: {}",
                object_id,
                new.forked_from_position,
                _run_link(new.pk),
            ),
            messages.SUCCESS,
        )
        return HttpResponseRedirect(reverse("admin:runtime_run_change", args=[new.pk]))

    @admin.action(description="Retry selected runs from their failed step")
    def retry_runs(self, request: HttpRequest, queryset: QuerySet[Run]) -> None:
        started: list[tuple[Run, Run]] = []
        nothing: list[str] = []
        for run in queryset.only("id"):
            try:
                started.append((run, retry_run(run.id)))
            except NothingToRetry:
                nothing.append(str(run.id))
            except (FanfoldError, ValueError, TypeError) as exc:
                self.message_user(request, f"Could not retry {run.id}: {exc}", messages.ERROR)
        if started:
            links = format_html_join(
                ", ",
                "{} (from {} at position {})",
                ((_run_link(new.pk), old.pk, new.forked_from_position) for old, new in started),
            )
            self.message_user(request, format_html("Retried: {}", links), messages.SUCCESS)
        if nothing:
            self.message_user(
                request,
                "No failed or cancelled step to retry from: " + ", ".join(nothing),
                messages.WARNING,
            )

    @admin.display(description="Fork links")
    def fork_links(self, run: Run) -> SafeString:
        parts = []
        if run.forked_from_id is not None:
            parts.append(
                format_html(
                    "Forked from {} at position {}.",
                    _run_link(run.forked_from_id),
                    run.forked_from_position,
                )
            )
        forks = list(run.forks.order_by("created_at").values_list("id", flat=True)[:50])
        if forks:
            links = format_html_join(", ", "{}", ((_run_link(f),) for f in forks))
            parts.append(format_html("Forks: {}.", links))
        if not parts:
            return format_html("<em>{}</em>", "not a fork, never forked")
        return format_html_join(" ", "{}", ((p,) for p in parts))

    def fork_context(self, run: Run) -> dict[str, Any]:
        """What the run's page needs for its fork buttons."""
        failed = (
            Step.objects.filter(run=run, status__in=[StepStatus.FAILED, StepStatus.CANCELLED])
            .order_by("position")
            .values_list("position", flat=True)
            .first()
        )
        return {
            "fork_url": reverse("admin:runtime_run_fork", args=[run.pk]),
            "retry_position": failed,
        }
