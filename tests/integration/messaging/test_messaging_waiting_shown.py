"""A run waiting in `ctx.recv` shows that step as waiting: in the API's steps and the admin."""

from __future__ import annotations

import re

import messaging_flows  # noqa: F401  (registers the workflows)
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from runtime import get_run, send, start
from runtime.models import RunStatus
from runtime.testing import InMemoryDispatcher
from tests.support.users import operator


def test_messaging_a_recv_wait_is_shown_waiting_in_the_api_and_the_admin(
    runs: InMemoryDispatcher,
) -> None:
    run = start("tests.msg.progress", 1)
    runs.join()
    assert get_run(run.id).status == RunStatus.WAITING
    user = operator("watcher", password="pw-watcher-1234", is_staff=True)

    api = APIClient()
    api.force_authenticate(user)
    steps = api.get(f"/api/runs/{run.id}/steps/").json()["results"]
    assert [(s["kind"], s["status"]) for s in steps] == [
        ("value", "completed"),
        ("message", "waiting"),
    ]

    admin = Client()
    admin.force_login(user)
    html = admin.get(reverse("admin:runtime_run_change", args=[run.id])).content.decode()
    bars = re.findall(
        r"class='fanfold-bar fanfold-([a-z]+)( fanfold-wait)?' data-position='2'", html
    )
    assert bars == [("waiting", " fanfold-wait")]
    assert "<td>waiting</td>" in html and "<td>running</td>" not in html

    send(run.id, "finish", None)
    runs.join()
    assert run.wait(timeout=5) == "done"
    finished = api.get(f"/api/runs/{run.id}/steps/").json()["results"]
    assert [s["status"] for s in finished] == ["completed", "completed"]
