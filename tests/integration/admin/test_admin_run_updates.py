"""A run's page lists its updates with their payloads, statuses and replies or reasons."""

from __future__ import annotations

import re

import pytest
from admin_pages import change_url
from django.test import Client
from django.utils import timezone

from runtime.models import RunUpdate
from tests.support.run_rows import waiting_run

pytestmark = pytest.mark.django_db


def test_admin_run_page_lists_updates_with_their_answers(staff_client: Client) -> None:
    run = waiting_run()
    now = timezone.now()
    RunUpdate.objects.create(
        run=run, update_id="u-1", name="add_item", payload={"sku": "A1"}, status="replied",
        reply={"count": 1}, created_at=now, received_position=2, answered_position=3,
        answered_at=now,
    )  # fmt: skip
    RunUpdate.objects.create(
        run=run, update_id="u-2", name="add_item", payload={"sku": "<b>X</b>"},
        status="rejected", reason="not sold", created_at=now,
    )  # fmt: skip
    RunUpdate.objects.create(run=run, update_id="u-3", name="checkout", created_at=now)

    html = staff_client.get(change_url(run)).content.decode()

    assert "3 updates, 1 pending." in html
    assert len(re.findall(r'<tr class="update-row">', html)) == 3
    assert "&quot;count&quot;: 1" in html and "not sold" in html and "u-3" in html
    assert "<b>X</b>" not in html  # escaped
