"""Updates over the REST API: 200 with the reply, 202 then a late read, 400 refused or
undeclared, 404, 409, permissions as for messages, and bad input answered 4xx."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest
import update_flows  # noqa: F401  (registers the workflows)
from django.contrib.auth.models import User
from django.core.cache import cache
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient
from update_pump import Pump

from runtime.handles import start
from runtime.models import Event, Run, RunUpdate
from runtime.testing import InMemoryDispatcher
from tests.support.users import grant, operator, starter


def _client(user: User) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return api


@pytest.fixture
def ops(runs: InMemoryDispatcher) -> APIClient:
    cache.clear()  # throttling counts
    return _client(operator("ada"))


def _code(response: Any) -> str:
    return str(response.json()["error"]["code"])


def test_updates_rest_reply_reject_refuse_and_finish(ops: APIClient, pump: Pump) -> None:
    run = start("tests.upd.cart", "r-1")
    url = f"/api/runs/{run.id}/updates/"
    ok = ops.post(url, {"name": "add_item", "payload": {"sku": "A1"}, "update_id": "u1"},
                  format="json")  # fmt: skip
    assert ok.status_code == 200, ok.content
    assert ok.json() == {"update_id": "u1", "status": "replied", "reply": {"count": 1, "cost": 200}}
    again = ops.post(url, {"name": "add_item", "payload": {"sku": "A1"}, "update_id": "u1"},
                     format="json")  # fmt: skip
    assert again.json() == ok.json()
    refused = ops.post(url, {"name": "add_item", "payload": {"no": "sku"}}, format="json")
    assert (refused.status_code, _code(refused)) == (400, "update_rejected")
    rejected = ops.post(url, {"name": "add_item", "payload": {"sku": "B", "qty": 99}},
                        format="json")  # fmt: skip
    assert (rejected.status_code, _code(rejected)) == (400, "update_rejected")
    assert "at most 10" in rejected.json()["error"]["message"]
    unknown = ops.post(url, {"name": "remove_item", "payload": {}}, format="json")
    assert (unknown.status_code, _code(unknown)) == (400, "unknown_update")
    done = ops.post(url, {"name": "checkout"}, format="json")
    assert done.json()["reply"] == {"items": [{"sku": "A1"}]}
    run.wait(timeout=10)
    finished = ops.post(url, {"name": "add_item", "payload": {"sku": "C"}}, format="json")
    assert (finished.status_code, _code(finished)) == (409, "run_finished")
    missing = ops.post(f"/api/runs/{uuid.uuid4()}/updates/", {"name": "checkout"}, format="json")
    assert missing.status_code == 404
    assert ops.post("/api/runs/nope/updates/", {"name": "x"}, format="json").status_code == 404
    assert RunUpdate.objects.filter(run_id=run.id).count() == 3  # u1, the rejected, checkout
    received = Event.objects.filter(run_id=run.id, type="update_received").order_by("seq")
    assert [e.payload["by"]["username"] for e in received] == ["ada", "ada", "ada"]


def test_updates_rest_wait_ends_first_then_read_by_id(
    ops: APIClient, runs: InMemoryDispatcher
) -> None:
    run = start("tests.upd.cart", "r-2")
    runs.join()
    url = f"/api/runs/{run.id}/updates/"
    body = {"name": "add_item", "payload": {"sku": "Z"}, "update_id": "late", "wait": 0.1}
    pending = ops.post(url, body, format="json")
    assert pending.status_code == 202
    assert pending.json() == {"update_id": "late", "status": "pending"}
    read = ops.get(f"{url}late/")
    assert read.status_code == 200 and read.json()["status"] == "pending"
    runs.join()
    answered = ops.get(f"{url}late/?wait=5").json()
    assert answered == {"update_id": "late", "name": "add_item", "payload": {"sku": "Z"},
                        "status": "replied", "reply": {"count": 1, "cost": 100},
                        "reason": None}  # fmt: skip
    assert ops.get(f"{url}nobody/").status_code == 404
    assert _code(ops.get(f"{url}nobody/")) == "update_not_found"
    assert ops.get(f"{url}late/?wait=-1").status_code == 400
    assert ops.get(f"{url}late/?wait=1000").status_code == 400


def test_updates_rest_update_with_start(ops: APIClient, pump: Pump) -> None:
    body: dict[str, Any] = {
        "workflow": "tests.upd.cart", "args": ["r-3"], "idempotency_key": "cart-r-3",
        "update": {"name": "add_item", "payload": {"sku": "A1"}},
    }  # fmt: skip
    first = ops.post("/api/updates/", body, format="json")
    assert first.status_code == 200, first.content
    assert first.json()["created"] is True and first.json()["reply"] == {"count": 1, "cost": 200}
    second = ops.post("/api/updates/", body, format="json")
    assert second.json()["created"] is False and second.json()["reply"]["count"] == 2
    assert second.json()["run_id"] == first.json()["run_id"]
    refused = ops.post("/api/updates/", {**body, "idempotency_key": "k-new",
                       "update": {"name": "add_item", "payload": {}}}, format="json")  # fmt: skip
    assert (refused.status_code, _code(refused)) == (400, "update_rejected")
    assert not Run.objects.filter(idempotency_key="k-new").exists()
    unknown = ops.post("/api/updates/", {**body, "workflow": "nope"}, format="json")
    assert unknown.status_code == 400
    no_key = {k: v for k, v in body.items() if k != "idempotency_key"}
    assert ops.post("/api/updates/", no_key, format="json").status_code == 400


def test_updates_rest_permissions_as_for_messages(ops: APIClient, pump: Pump) -> None:
    run = start("tests.upd.cart", "r-4")
    url = f"/api/runs/{run.id}/updates/"
    body = {"name": "add_item", "payload": {"sku": "A1"}}
    stranger = _client(starter("bo"))
    sent = stranger.post(url, body, format="json")
    assert (sent.status_code, _code(sent)) == (404, "not_found")
    assert stranger.get(f"{url}x/").status_code == 404
    viewer = _client(grant(starter("vi"), "view_run"))
    seen = viewer.post(url, body, format="json")
    assert (seen.status_code, _code(seen)) == (403, "permission_denied")
    assert APIClient().post(url, body, format="json").status_code in (401, 403)
    assert not RunUpdate.objects.filter(run_id=run.id).exists()
    # Update-with-start on a key names the caller's own run only: another user gets theirs.
    started = {"workflow": "tests.upd.cart", "args": ["mine"], "idempotency_key": "shared",
               "update": {"name": "add_item", "payload": {"sku": "A1"}}}  # fmt: skip
    a = ops.post("/api/updates/", started, format="json").json()
    b = stranger.post("/api/updates/", started, format="json").json()
    assert a["run_id"] != b["run_id"] and a["reply"] == b["reply"]


def test_updates_rest_bad_input_is_4xx(ops: APIClient, runs: InMemoryDispatcher) -> None:
    run = start("tests.upd.cart", "r-5")
    url = f"/api/runs/{run.id}/updates/"
    bodies = [
        ("{not json", "application/json"),
        ('{"name": "add_item", "payload": {"sku": "' + "x" * (2 * 1024 * 1024) + '"}}',
         "application/json"),
        ('{"name": "add_item", "payload": ' + "[" * 5000 + "]" * 5000 + "}", "application/json"),
        ('{"name": "\\ud800", "payload": 1}', "application/json"),
        ('{"name": "add_item", "payload": {"sku": "\\udfff"}}', "application/json"),
        ('{"name": "add_item", "payload": {"sku": "A"}, "update_id": ""}', "application/json"),
        ('{"name": "add_item", "payload": {"sku": "A"}, "wait": "soon"}', "application/json"),
        ('{"name": ["add_item"]}', "application/json"),
        ("name=add_item", "text/plain"),
    ]  # fmt: skip
    for body, kind in bodies:
        response = ops.post(url, body, content_type=kind)
        assert 400 <= response.status_code < 500, (body[:80], response.status_code)
    assert not RunUpdate.objects.filter(run_id=run.id).exists()


def test_updates_rest_waiting_callers_are_answered_in_arrival_order(
    ops: APIClient, pump: Pump
) -> None:
    run = start("tests.upd.cart", "r-6")
    url = f"/api/runs/{run.id}/updates/"
    answers: dict[int, Any] = {}

    def post(i: int) -> None:
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=ops._credentials["HTTP_AUTHORIZATION"])
        answers[i] = api.post(url, {"name": "add_item", "payload": {"sku": f"S{i}"}},
                              format="json").json()  # fmt: skip

    threads = [threading.Thread(target=post, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    counts = sorted(a["reply"]["count"] for a in answers.values())
    assert counts == [1, 2, 3, 4]
