"""Attacks on another user's runs through the API: reading and acting on them does no harm.

bob may start runs of his own (runtime.add_run) and nothing more: alice's runs, their inputs,
results, steps, events and streams are not found for him (404, as for a run that does not
exist), and cancelling, forking or retrying them changes nothing.
"""

from __future__ import annotations

import uuid
from typing import Any

import api_flow_control  # noqa: F401  (registers the scheduled workflows)
import api_flows  # noqa: F401  (registers the workflows)
import pytest
from api_security import client_of, post, start, users
from rest_framework.test import APIClient

from runtime.core.clock import FakeClock
from runtime.executor import execute
from runtime.models import Event, Run, Schedule
from tests.support.users import operator


def _alices_run(alice_api: APIClient, clock: FakeClock, workflow: str, *args: Any) -> str:
    response = start(alice_api, workflow, *args)
    assert response.status_code == 201, response.content
    execute(uuid.UUID(response.json()["id"]), clock=clock)
    return str(response.json()["id"])


@pytest.fixture
def scene(enqueued: list, clock: FakeClock) -> dict[str, Any]:
    alice, bob = users()
    alice_api = client_of(alice)
    return {
        "alice": alice_api,
        "bob": client_of(bob),
        "done": _alices_run(alice_api, clock, "tests.api.double", 123457),
        "sleeping": _alices_run(alice_api, clock, "tests.api.sleeper"),
        "broken": _alices_run(alice_api, clock, "tests.api.broken"),
    }


def _not_found(response: Any) -> None:
    assert response.status_code == 404, response.content
    assert response.json()["error"]["code"] == "not_found"


def test_api_security_list_shows_only_ones_own_runs(scene: dict[str, Any]) -> None:
    bob: APIClient = scene["bob"]
    mine = start(bob, "tests.api.double", 1).json()["id"]
    listed = bob.get("/api/runs/?include=input,result,error").json()["results"]
    assert [r["id"] for r in listed] == [mine]
    assert "123457" not in str(listed) and "246914" not in str(listed)  # alice's input, result
    theirs = scene["alice"].get("/api/runs/?include=result").json()["results"]
    assert "246914" in str(theirs)
    assert mine not in {r["id"] for r in theirs} and len(theirs) == 3


@pytest.mark.parametrize("path", ["", "steps/?include=input,result", "events/?include=payload"])
def test_api_security_anothers_run_and_records_are_not_found(
    scene: dict[str, Any], path: str
) -> None:
    for run in ("done", "sleeping", "broken"):
        _not_found(scene["bob"].get(f"/api/runs/{scene[run]}/{path}"))
        assert scene["alice"].get(f"/api/runs/{scene[run]}/{path}").status_code == 200


def test_api_security_anothers_stream_is_not_found(scene: dict[str, Any]) -> None:
    url = f"/api/runs/{scene['sleeping']}/streams/default/"
    _not_found(scene["bob"].get(url, HTTP_ACCEPT="text/event-stream"))


def test_api_security_cancel_fork_retry_of_anothers_run_change_nothing(
    scene: dict[str, Any],
) -> None:
    bob: APIClient = scene["bob"]
    _not_found(post(bob, f"/api/runs/{scene['sleeping']}/cancel/"))
    _not_found(post(bob, f"/api/runs/{scene['done']}/fork/", {"from_position": 1}))
    _not_found(post(bob, f"/api/runs/{scene['broken']}/retry/"))
    assert Run.objects.get(id=scene["sleeping"]).status == "waiting"
    assert Run.objects.count() == 3  # no fork, no retry
    assert not Event.objects.filter(type="run_cancelled").exists()


def test_api_security_view_run_sees_every_run_but_may_not_act(
    enqueued: list, clock: FakeClock
) -> None:
    alice, viewer = users("view_run")
    sleeping = _alices_run(client_of(alice), clock, "tests.api.sleeper")
    api = client_of(viewer)
    assert [r["id"] for r in api.get("/api/runs/").json()["results"]] == [sleeping]
    assert api.get(f"/api/runs/{sleeping}/steps/").status_code == 200
    refused = post(api, f"/api/runs/{sleeping}/cancel/")
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "permission_denied"
    assert Run.objects.get(id=sleeping).status == "waiting"


def test_api_security_change_run_acts_on_any_run_and_is_recorded(
    enqueued: list, clock: FakeClock
) -> None:
    alice, bob = users("change_run")
    sleeping = _alices_run(client_of(alice), clock, "tests.api.sleeper")
    assert post(client_of(bob), f"/api/runs/{sleeping}/cancel/").status_code == 200
    event = Event.objects.get(run_id=sleeping, type="run_cancelled")
    assert event.payload["by"] == {"user_id": bob.pk, "username": "bob"}


def test_api_security_owner_acts_on_own_runs_and_forks_stay_theirs(
    scene: dict[str, Any],
) -> None:
    alice: APIClient = scene["alice"]
    assert post(alice, f"/api/runs/{scene['sleeping']}/cancel/").status_code == 200
    cancelled = Event.objects.get(run_id=scene["sleeping"], type="run_cancelled")
    assert cancelled.payload["by"]["username"] == "alice"
    fork = post(alice, f"/api/runs/{scene['done']}/fork/", {"from_position": 1})
    retry = post(alice, f"/api/runs/{scene['sleeping']}/retry/")  # from its cancelled sleep
    assert (fork.status_code, retry.status_code) == (201, 201), retry.content
    owner = Run.objects.get(id=scene["done"]).owner_id
    for new in (fork.json()["id"], retry.json()["id"]):
        assert Run.objects.get(id=new).owner_id == owner
        created = Event.objects.get(run_id=new, type="run_created")
        assert created.payload["by"]["username"] == "alice"
    _not_found(scene["bob"].get(f"/api/runs/{fork.json()['id']}/"))


def test_api_security_starting_needs_add_run_and_the_workflows_permission(
    enqueued: list, anon: APIClient
) -> None:
    alice, bob = users("view_run")
    nobody = client_of(type(alice).objects.create_user("nobody"))
    refused = start(nobody, "tests.api.double", 1)
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "permission_denied"
    guarded = start(client_of(alice), "tests.api.guarded")
    assert guarded.status_code == 403 and "runtime.view_run" in guarded.json()["error"]["message"]
    assert start(client_of(bob), "tests.api.guarded").status_code == 201
    assert Run.objects.count() == 1


def test_api_security_pausing_schedules_needs_change_schedule(enqueued: list) -> None:
    _, bob = users()
    refused = post(client_of(bob), "/api/schedules/tests.api.nightly/pause/")
    assert refused.status_code == 403
    assert not Schedule.objects.filter(workflow="tests.api.nightly", paused=True).exists()
    paused = post(client_of(operator("scheduler")), "/api/schedules/tests.api.nightly/pause/")
    assert paused.status_code == 200 and paused.json()["paused"] is True
