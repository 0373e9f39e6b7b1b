"""The admin's deployment versions page: each version's runs in flight, workers and stranded
runs, and the checked upgrade of a version's runs (docs/deploying.md)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from runtime.access import actor_of, check_version_upgrade
from runtime.core.errors import InvalidArguments, NotPermitted
from runtime.deploy.upgrades import upgrade
from runtime.models import Run
from runtime.observe.versions import version_rows


def versions_page(model_admin: admin.ModelAdmin[Run], request: HttpRequest) -> HttpResponse:
    """GET: the versions. POST `version` (and `dry_run`): upgrade that version's runs that
    replay clean to this version, then show what moved and what was refused."""
    try:
        check_version_upgrade(request.user)
    except NotPermitted:
        raise PermissionDenied from None
    context: dict[str, Any] = {
        **model_admin.admin_site.each_context(request),
        "title": "Deployment versions",
        "opts": Run._meta,
    }
    if request.method == "POST":
        try:
            result = upgrade(
                request.POST.get("version", ""),
                dry_run=bool(request.POST.get("dry_run")),
                by=actor_of(request.user),
            )
            context["result"] = result
        except InvalidArguments as exc:
            context["error"] = str(exc)
    context["rows"] = version_rows()
    status = 400 if "error" in context else 200
    return render(request, "admin/runtime/run/versions.html", context, status=status)
