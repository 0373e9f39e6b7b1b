"""The run admin's pages beyond Django's own: the run's timeline and a page per workflow.

A mixin for `RunAdmin` (runtime.admin), so the admin module only names it: the timeline goes
into the run page's context, and `workflow/<name>/` is the workflow's page.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import URLPattern, path

from runtime.admin_timeline import timeline_context
from runtime.admin_workflow import workflow_stats
from runtime.models import Run


class RunPagesMixin:
    """Adds the timeline to the run page and the per-workflow page to the run admin."""

    admin_site: admin.AdminSite

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        context = dict(extra_context or {})
        pk = _pk(object_id)
        run = Run.objects.filter(pk=pk).first() if pk is not None else None
        if run is not None and self.has_view_permission(request, run):  # type: ignore[attr-defined]
            context.update(timeline_context(run))
        return super().change_view(request, object_id, form_url, context)  # type: ignore[misc]

    def get_urls(self) -> list[URLPattern]:
        view = self.admin_site.admin_view(self.workflow_view)
        own = [path("workflow/<path:name>/", view, name="runtime_run_workflow")]
        return own + super().get_urls()  # type: ignore[misc]

    def workflow_view(self, request: HttpRequest, name: str) -> HttpResponse:
        """Counts by status and p50/p95 durations of the workflow's recent runs and steps."""
        if not self.has_view_permission(request):  # type: ignore[attr-defined]
            return HttpResponse(status=403)
        context = {
            **self.admin_site.each_context(request),
            "title": f"Workflow {name}",
            "opts": Run._meta,
            "stats": workflow_stats(name),
        }
        return render(request, "admin/runtime/run/workflow.html", context)


def _pk(object_id: str) -> str | None:
    """The object id if it can name a run (a UUID), else None (Django then says not found)."""
    try:
        return str(uuid.UUID(object_id))
    except ValueError:
        return None
