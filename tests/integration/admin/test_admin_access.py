"""Who may see the run admin, and that nobody edits runs through it."""

from __future__ import annotations

import pytest
from admin_pages import change_url, changelist_url
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from runtime.models import Run, RunStatus
from tests.support.run_rows import finished_run

pytestmark = pytest.mark.django_db


def test_admin_lets_staff_operators_view_runs(staff_client: Client) -> None:
    run = finished_run()

    assert "Runs" in staff_client.get(reverse("admin:index")).content.decode()
    assert staff_client.get(changelist_url()).status_code == 200
    assert staff_client.get(change_url(run)).status_code == 200


@pytest.mark.parametrize("staff", [False, None], ids=["non-staff", "anonymous"])
def test_admin_refuses_users_who_are_not_staff(
    client: Client, django_user_model: type[User], staff: bool | None
) -> None:
    run = finished_run()
    if staff is not None:
        client.force_login(django_user_model.objects.create_user("visitor", password="pw-1234"))

    for url in (changelist_url(), change_url(run)):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("admin:login"))


def test_admin_offers_no_add_change_or_delete(staff_client: Client) -> None:
    run = finished_run()

    assert staff_client.get(reverse("admin:runtime_run_add")).status_code == 403
    assert staff_client.get(reverse("admin:runtime_run_delete", args=[run.pk])).status_code == 403
    edit = staff_client.post(change_url(run), {"workflow": "x", "status": RunStatus.FAILED})
    assert edit.status_code == 403
    run.refresh_from_db()
    assert (run.workflow, run.status) == ("examples.sequential_sum", RunStatus.COMPLETED)
    assert "delete_selected" not in staff_client.get(changelist_url()).content.decode()
    assert Run.objects.count() == 1
