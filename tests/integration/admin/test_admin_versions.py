"""The admin's deployment versions page: staff or runtime.upgrade_version; upgrades by form."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from runtime.models import Run
from tests.support.run_rows import make_run

pytestmark = pytest.mark.django_db

URL = "/admin/runtime/run/versions/"


def test_admin_versions_page_lists_versions_and_upgrades(staff_client: Client) -> None:
    run = make_run(status="pending")
    Run.objects.filter(id=run.id).update(app_version="v1")
    html = staff_client.get(URL).content.decode()
    assert html.count('<tr class="version-row">') == 2  # v1 and this process's ("tests")
    assert "v1" in html

    dry = staff_client.post(URL, {"version": "v1", "dry_run": "1"})
    assert dry.status_code == 200 and "would move" in dry.content.decode()
    assert Run.objects.get(id=run.id).app_version == "v1"
    done = staff_client.post(URL, {"version": "v1"})
    assert done.status_code == 200 and "1 moved" in done.content.decode()
    assert Run.objects.get(id=run.id).app_version == "tests"


def test_admin_versions_page_refuses_others_and_bad_input(staff_client: Client) -> None:
    User.objects.create_user("eve", password="pw-eve-12345", is_staff=False)
    eve = Client()
    eve.login(username="eve", password="pw-eve-12345")
    assert eve.get(URL).status_code in (302, 403)  # not staff: the admin's login page
    assert staff_client.post(URL, {"version": "no such/version"}).status_code == 400
    assert staff_client.post(URL, {"version": "tests"}).status_code == 400
