"""The schedules and concurrency-slots pages: listed, paused from an action, slots counted."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from runtime.models import ConcurrencySlot, Run, Schedule
from tests.support.run_rows import make_run

pytestmark = pytest.mark.django_db(transaction=True)


def schedule(**fields: Any) -> Schedule:
    now = timezone.now()
    return Schedule.objects.create(
        workflow="tests.admin.nightly", kind="cron", expression="0 3 * * *",
        created_at=now, updated_at=now, next_tick=now, **fields,
    )  # fmt: skip


def test_admin_schedules_list_and_pause_action(staff_client: Client) -> None:
    row = schedule()
    url = reverse("admin:runtime_schedule_changelist")
    page = staff_client.get(url)
    assert page.status_code == 200
    assert b"tests.admin.nightly" in page.content
    data = {"action": "pause", "_selected_action": [str(row.pk)], "index": 0}
    response = staff_client.post(url, data, follow=True)
    assert response.status_code == 200
    row.refresh_from_db()
    assert row.paused is True


def test_admin_slots_show_runs_in_use_and_waiting(staff_client: Client) -> None:
    ConcurrencySlot.objects.create(
        workflow="tests.admin.limited", key="c-9", capacity=2, updated_at=timezone.now()
    )
    for admitted, status in [(True, "running"), (True, "completed"), (False, "pending")]:
        run = make_run(workflow="tests.admin.limited", status=status)
        Run.objects.filter(id=run.id).update(concurrency_key="c-9", admitted=admitted)
    page = staff_client.get(reverse("admin:runtime_concurrencyslot_changelist"))
    assert page.status_code == 200
    cells = page.content.decode()
    assert '<td class="field-in_use">1</td>' in cells
    assert '<td class="field-waiting">1</td>' in cells
