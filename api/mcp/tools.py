"""What each MCP tool does, for one user: the API's permissions (runtime.access), the API's
serializers for what it shows, and `by` in the events of what it changes, as the API does.

Every function takes the user first and returns plain JSON values; a refusal raises the
runtime's typed errors (FanfoldError), which the server turns into the tool's error result.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from django.db.models import Q
from django.utils.dateparse import parse_datetime

from api.serializers import (
    EventSerializer,
    RunDetailSerializer,
    RunSummarySerializer,
    StepSummarySerializer,
    WorkflowSerializer,
)
from runtime.access import actor_of, check_start, run_to_change, visible_run, visible_runs
from runtime.agents.approvals import decide
from runtime.core.errors import InvalidArguments
from runtime.core.search import InvalidFilter
from runtime.messaging.mailbox import send_message
from runtime.run_queries import run_query
from runtime.selectors import (
    lagging_reads,
    registered_workflows,
    run_events,
    run_steps,
    search_attributes,
)
from runtime.services import cancel_run, start_run

MAX_PAGE = 100
_INCLUDE_RUN = {"input", "result", "error"}


def _actor(user: Any) -> dict[str, Any] | None:
    by = actor_of(user)
    return {**by, "via": "mcp"} if by is not None else None


def _limit(limit: object, most: int = MAX_PAGE) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= most:
        raise InvalidFilter(f"limit takes 1 to {most}", "limit")
    return limit


def _after(runs: Any, cursor: str | None) -> Any:
    """The runs after `cursor` ("<created_at ISO>|<run id>", newest first)."""
    if not cursor:
        return runs
    at, _, rid = cursor.partition("|")
    moment, run_id = parse_datetime(at), _uuid(rid)
    if moment is None or run_id is None:
        raise InvalidFilter("cursor is not one list_runs returned", "cursor")
    return runs.filter(Q(created_at__lt=moment) | Q(created_at=moment, id__lt=run_id))


def _uuid(text: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(text)
    except ValueError:
        return None


def list_runs(
    user: Any,
    *,
    search: dict[str, Any] | None = None,
    limit: int = 20,
    cursor: str | None = None,
    **filters: Any,
) -> dict[str, Any]:
    """The runs the user may see that meet the filters (as `GET /api/runs/`), newest first,
    each with its search attributes and its error; `next_cursor` pages on."""
    runs = visible_runs(user, run_query(search=search, text=True, **filters))
    with lagging_reads():
        page = list(_after(runs, cursor)[: _limit(limit) + 1])
        more, page = len(page) > limit, page[:limit]
        context = {"include": {"error"}, "search": search_attributes([r.id for r in page])}
        rows = RunSummarySerializer(page, many=True, context=context).data
    last = page[-1] if more else None
    return {
        "runs": rows,
        "next_cursor": f"{last.created_at.isoformat()}|{last.id}" if last else None,
    }


def get_run(user: Any, run_id: str) -> dict[str, Any]:
    """One run with its input, result or error, search attributes and step counts."""
    run = visible_run(user, run_id)
    with lagging_reads(fresh_as=run):
        return dict(RunDetailSerializer(run).data)


def run_history(user: Any, run_id: str, after: int = 0, limit: int = 50) -> dict[str, Any]:
    """The run's steps (all, by position) and its events after seq `after`, `limit` of them,
    payloads included as the API shows them with `?include=`."""
    run = visible_run(user, run_id)
    if isinstance(after, bool) or not isinstance(after, int) or after < 0:
        raise InvalidArguments("after takes a non-negative event seq")
    context = {"include": {"input", "result", "error", "payload"}}
    with lagging_reads(fresh_as=run):
        events = list(run_events(run.id).filter(seq__gt=after)[: _limit(limit)])
        steps = list(run_steps(run.id)[:500])
        return {
            "steps": StepSummarySerializer(steps, many=True, context=context).data,
            "events": EventSerializer(events, many=True, context=context).data,
            "next_after": events[-1].seq if len(events) == limit else None,
        }


def list_workflows(user: Any) -> list[dict[str, Any]]:
    """The registered workflows: parameters, schedules and search attributes."""
    rows = [dataclasses.asdict(w) for w in registered_workflows()]
    return list(WorkflowSerializer(rows, many=True).data)


def start(
    user: Any,
    workflow: str,
    args: list[Any] | None = None,
    kwargs: dict[str, Any] | None = None,
    idempotency_key: str | None = None,
    search: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Start a run owned by the user (who needs the workflow's start permissions)."""
    wf = check_start(user, workflow)
    run, created = start_run(wf, args or [], kwargs or {}, idempotency_key=idempotency_key,
                             owner=user, search=search)  # fmt: skip
    return {**RunDetailSerializer(run).data, "created": created}


def cancel(user: Any, run_id: str) -> dict[str, Any]:
    """Cancel a run the user may change, recorded with who."""
    run = run_to_change(user, run_id)
    return dict(RunDetailSerializer(cancel_run(run.id, by=_actor(user))).data)


def send(
    user: Any, run_id: str, topic: str, value: Any, idempotency_key: str | None = None
) -> dict[str, Any]:
    """Send a message to a run's mailbox, as `POST /api/runs/{id}/messages/`."""
    run = run_to_change(user, run_id, action="sending messages to")
    sent = send_message(run.id, topic, value, idempotency_key=idempotency_key, by=_actor(user))
    return {"id": sent.id, "created": sent.created}


def decide_approval(
    user: Any, run_id: str, approval_id: str, approved: bool, reason: str | None = None
) -> dict[str, Any]:
    """Approve or deny an agent's tool call, once, as the API does."""
    run = run_to_change(user, run_id)
    if not isinstance(approved, bool):
        raise InvalidArguments("approved takes true or false")
    approval = decide(run.id, approval_id, approved, reason, _actor(user))
    return {k: _plain(v) for k, v in dataclasses.asdict(approval).items()}


def _plain(value: Any) -> Any:
    return value.isoformat() if hasattr(value, "isoformat") else value
