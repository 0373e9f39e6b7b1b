"""The admin's Approve in a browser: a run waiting on an agent's tool-call approval shows the
tool and its arguments, and an operator approves it under gunicorn; the decision is in the
run's log with who gave it, and the answer is in the run's mailbox to wake it."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from runtime.agents.approvals import record_requests
from runtime.models import Event, Message
from runtime.store.messaging.approvals import answer_topic
from tests.acceptance.test_admin_browser import (
    browser_page,
    chromium,
    log_in,
    off_site,
    operator,
    screenshot,
    server,
    sync_api,
)
from tests.support.run_rows import waiting_run

__all__ = ["chromium", "operator", "server"]

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_admin_browser_approves_an_agents_tool_call(
    server: str, chromium: Path, operator: User
) -> None:
    run = waiting_run()
    request = str(uuid.uuid4())
    call = {"tool_call_id": "call-1", "tool_name": "refund", "arguments": {"order": 7}}
    record_requests(str(run.pk), request, [call])
    expect = sync_api.expect
    requests: list[str] = []

    with browser_page(chromium, requests) as page:
        log_in(page, server)
        page.goto(server + reverse("admin:runtime_run_change", args=[run.pk]))
        row = page.locator("#approvals tr.approval-row")
        expect(row).to_have_count(1)
        expect(row).to_contain_text("refund")
        expect(row.locator("pre")).to_contain_text('"order": 7')
        screenshot(page, "admin-run-approval.png")
        row.get_by_role("button", name="Approve").click()
        expect(page.locator(".messagelist .success")).to_have_text("Approved refund.")
        expect(page.locator("#approvals")).to_have_count(0)

    assert off_site(requests) == []
    decided = Event.objects.get(run_id=run.pk, type="approval_decided").payload
    assert decided["approved"] is True and decided["by"]["username"] == "operator"
    answer = Message.objects.get(run_id=run.pk, topic=answer_topic(request)).value
    assert answer == {"approvals": {"call-1": True}}
