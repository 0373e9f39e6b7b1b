"""The run list's actions on the selected runs: cancel, re-run, retry from the failed step.

Each goes through a service (runtime.services, runtime.forks) run by run, so one run that
cannot be changed is named in a message and the others still are; new runs are linked.
The list holds only the runs the user may see; cancel and retry also need the right to change
each run (its owner, or runtime.change_run), re-run the right to start its workflow, and the
user is recorded as who acted (re-runs are theirs).
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from runtime.access import actor_of, can_change, check_start
from runtime.admin.display import run_link, runs_phrase
from runtime.core.errors import FanfoldError, NothingToRetry, RunAlreadyFinished, RunNotFound
from runtime.forks import retry_run
from runtime.models import Run
from runtime.services import cancel_run, start_run


@admin.action(description="Cancel selected runs")
def cancel_runs(
    model_admin: admin.ModelAdmin[Run], request: HttpRequest, queryset: QuerySet[Run]
) -> None:
    """Cancel each selected run that has not finished; name the ones that had."""
    cancelled, finished = 0, []
    by = actor_of(request.user)
    for run in _changeable(
        model_admin, request, queryset.select_related(None).only("id", "owner_id")
    ):
        try:
            cancel_run(run.id, reason="cancelled from the admin", by=by)
        except (RunAlreadyFinished, RunNotFound):
            finished.append(str(run.id))
        except FanfoldError as exc:  # a failed checkpoint write: say so, try the next run
            model_admin.message_user(request, f"Could not cancel {run.id}: {exc}", messages.ERROR)
        else:
            cancelled += 1
    if cancelled:
        model_admin.message_user(request, f"Cancelled {runs_phrase(cancelled)}.", messages.SUCCESS)
    if finished:
        model_admin.message_user(
            request,
            f"{runs_phrase(len(finished))} had already finished and stayed as they were: "
            + ", ".join(finished),
            messages.WARNING,
        )


@admin.action(description="Re-run selected runs (same workflow and input)")
def rerun_runs(
    model_admin: admin.ModelAdmin[Run], request: HttpRequest, queryset: QuerySet[Run]
) -> None:
    """Start a new run of each selected run's workflow with the same input."""
    started: list[tuple[Run, Run]] = []
    for run in queryset.select_related(None).only("id", "workflow", "input"):
        try:
            check_start(request.user, run.workflow)
            new, _ = start_run(run.workflow, run.args, run.kwargs, owner=request.user)
        except (FanfoldError, ValueError, TypeError) as exc:
            model_admin.message_user(request, f"Could not re-run {run.id}: {exc}", messages.ERROR)
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
        model_admin.message_user(
            request,
            format_html("Started {}: {}", runs_phrase(len(started)), links),
            messages.SUCCESS,
        )


@admin.action(description="Retry selected runs from their failed step")
def retry_runs(
    model_admin: admin.ModelAdmin[Run], request: HttpRequest, queryset: QuerySet[Run]
) -> None:
    """Fork each selected run from its first failed or cancelled step."""
    started: list[tuple[Run, Run]] = []
    nothing: list[str] = []
    by = actor_of(request.user)
    for run in _changeable(
        model_admin, request, queryset.select_related(None).only("id", "owner_id")
    ):
        try:
            started.append((run, retry_run(run.id, by=by)))
        except NothingToRetry:
            nothing.append(str(run.id))
        except (FanfoldError, ValueError, TypeError) as exc:
            model_admin.message_user(request, f"Could not retry {run.id}: {exc}", messages.ERROR)
    if started:
        links = format_html_join(
            ", ",
            "{} (from {} at position {})",
            ((run_link(new.pk), old.pk, new.forked_from_position) for old, new in started),
        )
        model_admin.message_user(request, format_html("Retried: {}", links), messages.SUCCESS)
    if nothing:
        model_admin.message_user(
            request,
            "No failed or cancelled step to retry from: " + ", ".join(nothing),
            messages.WARNING,
        )


def _changeable(
    model_admin: admin.ModelAdmin[Run], request: HttpRequest, queryset: QuerySet[Run]
) -> list[Run]:
    """The selected runs the user may change; the others are named in a message."""
    runs = list(queryset)
    allowed = [run for run in runs if can_change(request.user, run)]
    refused = [str(run.id) for run in runs if run not in allowed]
    if refused:
        model_admin.message_user(
            request,
            "You may not change these runs (they are not yours and you lack "
            "runtime.change_run): " + ", ".join(refused),
            messages.ERROR,
        )
    return allowed
