"""What a run's admin page shows beyond its fields: counts, paged tables, timeline, fork buttons,
its messages, values and signals.

A run may have tens of thousands of steps and events, so its page never renders them all: both
tables are paginated (`?steps_page=N`, `?events_page=N`) and headed by counts per status.
"""

from __future__ import annotations

from typing import Any

from django.core.paginator import Page, Paginator
from django.http import HttpRequest

from runtime import conf
from runtime.admin.display import compact_json, error_summary, relative_time, seconds_between
from runtime.admin.forks import fork_buttons
from runtime.admin.run_messages import messaging_context
from runtime.admin.run_updates import updates_context
from runtime.admin.timeline import timeline_context
from runtime.core.callbacks import recover_token
from runtime.models import Event, Run, Step
from runtime.models.states import SHOWN_STEP_STATUSES
from runtime.store.messaging.approvals import waits_for_an_approval

STEPS_PER_PAGE = 100
EVENTS_PER_PAGE = 100

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
    "callback_token",
)


def run_page_context(request: HttpRequest, run: Run) -> dict[str, Any]:
    """Everything the run page's template adds to Django's change form, for one run."""
    return {
        **_steps_context(request, run),
        **_events_context(request, run),
        **fork_buttons(request.user, run),
        **timeline_context(run),
        **messaging_context(run),
        **updates_context(run),
    }


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


def _steps_context(request: HttpRequest, run: Run) -> dict[str, Any]:
    """The run page's step counts and its page of the step table."""
    # Counted as the table shows them: an open wait is `waiting` in both.
    by_status = Step.objects.filter(run=run).counts_by_shown_status()
    rows = Step.objects.filter(run=run).order_by("position").only(*_STEP_LIST_FIELDS)
    steps = _page(request, "steps_page", rows, STEPS_PER_PAGE)
    return {
        "step_status_counts": [
            (label, by_status[value]) for value, label in SHOWN_STEP_STATUSES if value in by_status
        ],
        "step_total": sum(by_status.values()),
        "steps_pager": _pager(request, "steps_page", steps, "steps"),
        "step_rows": [
            {
                "step": step,
                "duration": seconds_between(step.started_at, step.finished_at),
                "error": error_summary(step.error),
                "token": _callback_token(step),
                "forkable": not waits_for_an_approval(step.kind, step.name),
            }
            for step in steps
        ],
    }


def _callback_token(step: Step) -> str | None:
    """A callback step's token: the page is served only to users who may see the run."""
    if not step.callback_token:
        return None
    return recover_token(conf.token_secrets(), step.run_id, step.id, step.callback_token)


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
        "event_rows": _event_rows(run, list(events)),
    }


def _event_rows(run: Run, events: list[Event]) -> list[dict[str, Any]]:
    """The events in seq order, each at the time it was recorded by: an event stamped when it
    happened (a step drafted in memory) can commit after one stamped later, so its seq comes
    after; it is shown at the time of the event before it, with its own time in `happened`."""
    rows, latest = [], None
    for event in events:
        happened = event.created_at
        shown = happened if latest is None or happened >= latest else latest
        latest = shown
        rows.append(
            {
                "event": event,
                "offset": relative_time(run.created_at, shown),
                "happened": None if shown == happened else relative_time(run.created_at, happened),
                "payload": compact_json(event.payload),
            }
        )
    return rows
