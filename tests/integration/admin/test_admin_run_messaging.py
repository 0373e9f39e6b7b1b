"""A run's page shows its mailbox, its latest values and the signals it took or waits for."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from admin_pages import change_url
from django.test import Client
from django.utils import timezone

from runtime.admin.run_messages import MESSAGES_SHOWN
from runtime.models import Message, RunValue, SignalWait
from tests.support.run_rows import make_run, waiting_run

pytestmark = pytest.mark.django_db


def rows(html: str, css_class: str) -> int:
    return len(re.findall(rf'<tr class="{css_class}">', html))


def test_admin_run_page_shows_messages_values_and_signals(staff_client: Client) -> None:
    run = waiting_run()
    now = timezone.now()
    Message.objects.create(
        run=run, topic="approval", value={"by": "ana"}, created_at=now,
        idempotency_key="mail-17", received_position=3, received_at=now,
    )  # fmt: skip
    Message.objects.create(run=run, topic="approval", value={"by": "<b>bo</b>"}, created_at=now)
    RunValue.objects.create(run=run, key="progress", value={"done": 3}, position=2, updated_at=now)
    SignalWait.objects.create(run=run, position=4, name="payment.settled",
                              match={"order_id": "42"}, match_key="k" * 64,
                              accepts_from=now - timedelta(minutes=5), created_at=now,
                              closed_at=now, signal_id=7,
                              payload={"order_id": "42", "amount": 10})  # fmt: skip
    SignalWait.objects.create(run=run, position=5, name="payment.refunded",
                              match={"order_id": "42"}, match_key="m" * 64, accepts_from=now,
                              created_at=now)  # fmt: skip

    html = staff_client.get(change_url(run)).content.decode()

    assert "2 messages, 1 received." in html
    assert rows(html, "message-row") == 2
    assert "mail-17" in html and "&quot;by&quot;: &quot;ana&quot;" in html
    assert "<b>bo</b>" not in html  # escaped
    assert rows(html, "value-row") == 1 and "&quot;done&quot;: 3" in html
    assert rows(html, "signal-row") == 2
    assert "payment.settled" in html and "&quot;amount&quot;: 10" in html
    assert ">taken<" in html and ">waiting<" in html


def test_admin_run_page_bounds_a_large_mailbox(staff_client: Client) -> None:
    run = make_run()
    now = timezone.now()
    Message.objects.bulk_create(
        Message(run=run, topic="t", value=n, created_at=now) for n in range(MESSAGES_SHOWN + 5)
    )

    html = staff_client.get(change_url(run)).content.decode()

    assert rows(html, "message-row") == MESSAGES_SHOWN
    assert f"the newest {MESSAGES_SHOWN} shown" in html
    assert "No values." in html and "No signal waits." in html


def test_admin_run_page_messages_stay_read_only(staff_client: Client) -> None:
    run = make_run()
    Message.objects.create(run=run, topic="t", value=1, created_at=timezone.now())

    edit = staff_client.post(change_url(run), {"workflow": "x"})

    assert edit.status_code == 403
    assert Message.objects.get(run=run).value == 1
