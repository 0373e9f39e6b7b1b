"""Approvals on a run's admin page: the tool calls an agent waits on, with Approve / Deny
for users who may change the run (runtime.agents.approvals decides, with `by`)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse

from runtime.access import actor_of
from runtime.admin.display import pretty_json
from runtime.agents.approvals import decide as decide_approval
from runtime.core.errors import FanfoldError
from runtime.models import Run
from runtime.store.messaging.approvals import pending_approvals


def approvals_context(run: Run) -> dict[str, Any]:
    """What the run page's Approvals box shows: the pending approvals, arguments pretty."""
    pending = pending_approvals(run.pk)
    rows = [{"approval": a, "arguments": pretty_json(a.arguments)} for a in pending]
    return {"approval_rows": rows}


def decide_from_form(
    model_admin: admin.ModelAdmin[Run], request: HttpRequest, run: Run, approval_id: str
) -> HttpResponse:
    """Approve (`decision=approve`) or deny the approval, with its row's reason; back to
    the run's page with what happened. The caller checked POST and the change right."""
    back = reverse("admin:runtime_run_change", args=[run.pk])
    decision = request.POST.get("decision")
    if decision not in ("approve", "deny"):
        model_admin.message_user(request, "Approve or deny?", messages.ERROR)
        return HttpResponseRedirect(back)
    reason = request.POST.get(f"reason_{approval_id}") or None
    try:
        approval = decide_approval(
            run.pk,
            approval_id,
            decision == "approve",
            reason,
            actor_of(request.user),
        )
    except FanfoldError as exc:
        model_admin.message_user(request, f"Could not decide: {exc}", messages.ERROR)
        return HttpResponseRedirect(back)
    verb = "Approved" if approval.approved else "Denied"
    model_admin.message_user(request, f"{verb} {approval.tool_name}.", messages.SUCCESS)
    return HttpResponseRedirect(back)
