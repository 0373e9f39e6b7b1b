"""Fork and retry on a run's admin page: "Fork from this step" on each step, "Retry from the
failed step" on the page, and the links between a fork and its source.

All of them go through runtime.forks; the new run's page is linked in the message. The bulk
retry of the runs selected in the list is with the other actions (runtime.admin.actions).
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from runtime.access import actor_of, can_change, check_start
from runtime.admin.display import run_link
from runtime.core.errors import FanfoldError, NotPermitted, WorkflowNotFound
from runtime.forks import first_failed_position, fork_run
from runtime.models import Run

MAX_FORK_LINKS = 50


def fork_from_form(
    model_admin: admin.ModelAdmin[Run], request: HttpRequest, object_id: str
) -> HttpResponse:
    """Fork run `object_id` from the form's `position`; show the new run, or say what failed.

    The caller has checked the method (POST) and the user's permission; a failure is a
    message on the source run's page, where the form was.
    """
    back = reverse("admin:runtime_run_change", args=[object_id])
    try:
        position = int(request.POST.get("position", ""))
    except ValueError:
        model_admin.message_user(
            request, "Fork from which position? Give a number.", messages.ERROR
        )
        return HttpResponseRedirect(back)
    try:
        new = fork_run(object_id, position, by=actor_of(request.user))
    except (FanfoldError, ValueError, TypeError) as exc:
        model_admin.message_user(request, f"Could not fork: {exc}", messages.ERROR)
        return HttpResponseRedirect(back)
    model_admin.message_user(
        request,
        format_html(
            "Forked {} from position {}: {}",
            object_id,
            new.forked_from_position,
            run_link(new.pk),
        ),
        messages.SUCCESS,
    )
    return HttpResponseRedirect(reverse("admin:runtime_run_change", args=[new.pk]))


def source_and_fork_links(run: Run) -> SafeString:
    """The run's source (if it is a fork) and its first forks, as links."""
    parts = []
    if run.forked_from_id is not None:
        parts.append(
            format_html(
                "Forked from {} at position {}.",
                run_link(run.forked_from_id),
                run.forked_from_position,
            )
        )
    forks = list(run.forks.order_by("created_at").values_list("id", flat=True)[:MAX_FORK_LINKS])
    if forks:
        links = format_html_join(", ", "{}", ((run_link(f),) for f in forks))
        parts.append(format_html("Forks: {}.", links))
    if not parts:
        return format_html("<em>{}</em>", "not a fork, never forked")
    return format_html_join(" ", "{}", ((p,) for p in parts))


def fork_buttons(user: Any, run: Run) -> dict[str, Any]:
    """What the run's page needs for its cancel, fork, retry and re-run buttons: only the
    buttons `user` may use are shown (the actions check again when posted)."""
    may_change = can_change(user, run)
    return {
        "may_change": may_change,
        "may_rerun": _may_start(user, run.workflow),
        "fork_url": reverse("admin:runtime_run_fork", args=[run.pk]),
        "retry_position": first_failed_position(run) if may_change else None,
    }


def _may_start(user: Any, workflow: str) -> bool:
    try:
        check_start(user, workflow)
    except (NotPermitted, WorkflowNotFound):
        return False
    return True
