"""`/api/versions/`: staff and holders of runtime.upgrade_version only; bad input is a 400."""

from __future__ import annotations

from typing import Any

import pytest
from api_security import client_of, post, users
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from runtime.models import Run
from runtime.services import start_run
from tests.support.users import grant


def test_api_versions_need_staff_or_upgrade_version(enqueued: Any) -> None:
    alice, bob = users()
    start_run("examples.noop_loop", [1], app_version="v1")
    assert client_of(bob).get("/api/versions/").status_code == 403
    assert post(client_of(bob), "/api/versions/v1/upgrade/").status_code == 403
    assert APIClient().get("/api/versions/").status_code in (401, 403)
    assert Run.objects.get().app_version == "v1"

    holder = grant(alice, "upgrade_version")
    listed = client_of(holder).get("/api/versions/")
    assert listed.status_code == 200
    rows = {row["version"]: row for row in listed.json()}
    assert rows["v1"]["pending"] == 1 and rows["v1"]["stranded"] == 1
    assert rows["tests"]["current"] is True

    staff = User.objects.create_user("root", is_staff=True)
    moved = post(client_of(staff), "/api/versions/v1/upgrade/", {"dry_run": True})
    assert moved.status_code == 200, moved.content
    assert moved.json()["dry_run"] is True and len(moved.json()["moved"]) == 1
    assert Run.objects.get().app_version == "v1"
    done = post(client_of(staff), "/api/versions/v1/upgrade/")
    assert done.status_code == 200 and done.json()["to"] == "tests"
    assert Run.objects.get().app_version == "tests"


@pytest.mark.parametrize(
    ("version", "body"),
    [
        ("a%20b", {}),
        ("v1", {"to": "../etc"}),
        ("v1", {"dry_run": "maybe"}),
        ("v1", {"to": "x" * 65}),
        ("tests", {}),
        ("v1", {"to": ["v2"]}),
        ("-v1", {}),
    ],
)
def test_api_versions_bad_input_is_a_400(version: str, body: Any, enqueued: Any) -> None:
    staff = User.objects.create_user("root", is_staff=True)
    response = post(client_of(staff), f"/api/versions/{version}/upgrade/", body)
    assert response.status_code == 400, response.content
    assert "error" in response.json()
