"""Tool-call approvals: the statements behind runtime.agents.approvals and its REST view.

An approval lives in the run's event log, nowhere else: `approval_requested` (one per tool
call, written by the step that asks) and `approval_decided` (written by the person's decision,
with `by`). Both are appended under the run's row lock with the next seq, like every append.
When the last call of one request is decided, `decide` returns the answer, which the caller
(runtime.agents.approvals) sends to the run's mailbox on the request's topic.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import F

from runtime.core.clock import current_time
from runtime.core.errors import CallbackAlreadyCompleted, RunNotFound
from runtime.models import Event, Run

REQUESTED = "approval_requested"
DECIDED = "approval_decided"


class ApprovalNotFound(RunNotFound):
    """No approval with this id was asked for in this run."""

    code = "approval_not_found"


class ApprovalAlreadyDecided(CallbackAlreadyCompleted):
    """The approval was decided before (an approval is decided once)."""

    code = "approval_decided"


@dataclass(frozen=True)
class Approval:
    """One tool call waiting for (or given) a person's decision."""

    id: str
    request: str
    tool_call_id: str
    tool_name: str
    arguments: Any
    asked_at: datetime
    approved: bool | None = None
    reason: str | None = None
    by: dict[str, Any] | None = None
    decided_at: datetime | None = None


ANSWER_TOPIC_PREFIX = "fanfold.approvals."


def answer_topic(request: str) -> str:
    """The mailbox topic the answer to approval request `request` arrives on."""
    return f"{ANSWER_TOPIC_PREFIX}{request}"


def waits_for_an_approval(kind: str, name: str) -> bool:
    """Whether a step of this kind and name is a run's wait for a person's decision (a
    `ctx.recv` on an answer topic): forking from it would wait for a decision nobody can give,
    since the approval requests stay in the source run's log."""
    return kind == "message" and name.startswith(ANSWER_TOPIC_PREFIX)


def _append(run_id: uuid.UUID, kind: str, payloads: list[dict[str, Any]]) -> None:
    """Append events of type `kind` to the run's log; takes seqs under the run's row lock."""
    if not payloads:
        return
    Run.objects.filter(id=run_id).update(last_seq=F("last_seq") + len(payloads))
    last = Run.objects.values_list("last_seq", flat=True).get(id=run_id)
    now = current_time()
    first = last - len(payloads) + 1
    Event.objects.bulk_create(
        Event(run_id=run_id, seq=first + i, type=kind, payload=p, created_at=now)
        for i, p in enumerate(payloads)
    )


def record_requests(run_id: uuid.UUID, request: str, calls: list[dict[str, Any]]) -> None:
    """Record one `approval_requested` per call of `request` (idempotent: a retried asking step
    writes nothing twice). Each call is `{"approval_id", "tool_call_id", "tool_name",
    "arguments"}`."""
    with transaction.atomic():
        Run.objects.select_for_update().filter(id=run_id).first()
        # Compared here, not in SQL: payloads may be encrypted at rest.
        asked = Event.objects.filter(run_id=run_id, type=REQUESTED).values_list(
            "payload", flat=True
        )
        if any(p.get("request") == request for p in asked):
            return
        _append(run_id, REQUESTED, [{**c, "request": request} for c in calls])


def approvals_of(run_id: uuid.UUID) -> list[Approval]:
    """Every approval the run asked for, oldest first, with its decision when there is one."""
    rows = Event.objects.filter(run_id=run_id, type__in=(REQUESTED, DECIDED)).order_by("seq")
    asked: dict[str, Approval] = {}
    decided: dict[str, tuple[dict[str, Any], datetime]] = {}
    for kind, payload, at in rows.values_list("type", "payload", "created_at"):
        if kind == REQUESTED:
            asked[payload["approval_id"]] = Approval(
                id=payload["approval_id"],
                request=payload["request"],
                tool_call_id=payload["tool_call_id"],
                tool_name=payload["tool_name"],
                arguments=payload.get("arguments"),
                asked_at=at,
            )
        else:
            decided[payload["approval_id"]] = (payload, at)
    out = []
    for approval in asked.values():
        got = decided.get(approval.id)
        if got is not None:
            approval = _decided(approval, *got)
        out.append(approval)
    return out


def _decided(approval: Approval, payload: dict[str, Any], at: datetime) -> Approval:
    return Approval(
        id=approval.id,
        request=approval.request,
        tool_call_id=approval.tool_call_id,
        tool_name=approval.tool_name,
        arguments=approval.arguments,
        asked_at=approval.asked_at,
        approved=bool(payload["approved"]),
        reason=payload.get("reason"),
        by=payload.get("by"),
        decided_at=at,
    )


def pending_approvals(run_id: uuid.UUID) -> list[Approval]:
    """The run's approvals still waiting for a decision."""
    return [a for a in approvals_of(run_id) if a.approved is None]


def decide(
    run_id: uuid.UUID,
    approval_id: str,
    approved: bool,
    reason: str | None,
    by: dict[str, Any] | None,
) -> tuple[Approval, dict[str, Any] | None]:
    """Decide approval `approval_id` once; returns it, and the answer to send to the run when it
    was the last open call of its request (else None). Raises ApprovalNotFound or
    ApprovalAlreadyDecided."""
    with transaction.atomic():
        Run.objects.select_for_update().filter(id=run_id).first()
        approvals = {a.id: a for a in approvals_of(run_id)}
        approval = approvals.get(approval_id)
        if approval is None:
            raise ApprovalNotFound(f"run {run_id} asked for no approval {approval_id}")
        if approval.approved is not None:
            raise ApprovalAlreadyDecided(f"approval {approval_id} was already decided")
        payload: dict[str, Any] = {"approval_id": approval_id, "approved": approved}
        if reason is not None:
            payload["reason"] = reason
        if by is not None:
            payload["by"] = by
        _append(run_id, DECIDED, [payload])
    decided = _decided(approval, payload, current_time())
    approvals[approval_id] = decided
    siblings = [a for a in approvals.values() if a.request == approval.request]
    if any(a.approved is None for a in siblings):
        return decided, None
    return decided, {"approvals": {a.tool_call_id: _answer(a) for a in siblings}}


def _answer(approval: Approval) -> Any:
    """The answer pydantic-ai's DeferredToolResults takes for one approval (its JSON form)."""
    if approval.approved:
        return True
    return {"kind": "tool-denied", "message": approval.reason or "The tool call was denied."}
