"""Django tasks and search attributes, on real PostgreSQL: a plain task's run carries its path
as the `task` attribute (listed by `task=` in list_runs, the API, the CLI and the admin's task
filter); a task that is a workflow takes its workflow's attributes from `using(search=...)`."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from runtime import RunHandle, list_runs
from runtime.core.errors import InvalidArguments
from runtime.core.search import InvalidFilter
from runtime.django_tasks.compat import InvalidTask
from runtime.models import Run
from runtime.selectors import search_attributes
from tests.support import sample_tasks as tasks
from tests.support.users import operator, starter

ADD = "tests.support.sample_tasks.add"
ECHO = "tests.support.sample_tasks.echo"


def _ids(handles: list[RunHandle]) -> list[str]:
    return [str(h.id) for h in handles]


def test_tasks_backend_a_plain_task_run_has_its_path_as_the_task_attribute() -> None:
    first, other, second = tasks.add.enqueue(1, 2), tasks.echo.enqueue("x"), tasks.add.enqueue(3, 4)
    found = search_attributes([uuid.UUID(r.id) for r in (first, other, second)])
    assert [found[uuid.UUID(r.id)] for r in (first, other, second)] == [
        {"task": ADD}, {"task": ECHO}, {"task": ADD},
    ]  # fmt: skip
    assert _ids(list_runs(task=ADD)) == [second.id, first.id]  # newest first
    assert _ids(list_runs(task=ECHO)) == [other.id]
    assert list_runs(task="tests.support.sample_tasks.nothing") == []
    assert _ids(list_runs(workflow="fanfold.django_task", search={"task": ADD})) == [
        second.id, first.id,
    ]  # fmt: skip
    with pytest.raises(InvalidFilter, match="task"):
        list_runs(task="x" * 300)


def test_tasks_backend_a_plain_task_takes_no_attributes_of_its_own() -> None:
    with pytest.raises(InvalidTask, match="not a workflow"):
        tasks.add.using(search={"customer": 7}).enqueue(1, 2)
    assert not Run.objects.exists()


def test_tasks_backend_a_workflow_task_takes_its_workflows_attributes_from_using() -> None:
    billed = tasks.invoice.using(search={"customer": 7}, priority=50)
    assert (billed.priority, billed.search, tasks.invoice.search) == (50, {"customer": 7}, None)
    result = billed.enqueue(7)
    rid = uuid.UUID(result.id)
    assert search_attributes([rid]) == {rid: {"customer": 7}}
    assert _ids(list_runs(search={"customer": 7})) == [result.id]
    with pytest.raises(InvalidArguments, match="must be of type int"):
        tasks.invoice.using(search={"customer": "seven"}).enqueue(7)
    with pytest.raises(InvalidArguments, match="declares no search attribute 'region'"):
        tasks.invoice.using(search={"region": "eu"}).enqueue(7)
    later = timezone.now() + timedelta(hours=1)
    with pytest.raises(InvalidArguments, match="run_after takes no search attributes"):
        tasks.invoice.using(search={"customer": 7}, run_after=later).enqueue(7)
    assert Run.objects.count() == 1
    with pytest.raises(InvalidTask, match="dict"):
        tasks.invoice.using(search=["customer"])  # type: ignore[arg-type]


def test_tasks_backend_api_cli_and_admin_list_a_task_by_its_path() -> None:
    mine, other = tasks.add.enqueue(1, 2), tasks.echo.enqueue("x")
    api = APIClient()
    api.force_authenticate(operator("reader"))
    listed = api.get("/api/runs/", {"task": ADD}).json()["results"]
    assert [(r["id"], r["name"]) for r in listed] == [(mine.id, ADD)]
    assert api.get("/api/runs/", {"task": "x" * 300}).status_code == 400
    stranger = APIClient()
    stranger.force_authenticate(starter("stranger"))
    assert stranger.get("/api/runs/", {"task": ADD}).json()["results"] == []
    out = StringIO()
    call_command("fanfold", "runs", "--task", ADD, "--json", stdout=out, stderr=StringIO())
    [row] = json.loads(out.getvalue())
    shown = (row["id"], row["name"], row["args"], row["search"])
    assert shown == (mine.id, ADD, [1, 2], {"task": ADD})
    looker = Client()
    looker.force_login(operator("looker", is_staff=True))
    changelist = reverse("admin:runtime_run_changelist")
    page = looker.get(changelist).content.decode()
    assert f"?task={ADD}" in page and f"?task={ECHO}" in page  # the filter offers both paths
    only = looker.get(changelist, {"task": ECHO}).content.decode().replace("<wbr>", "")
    assert f"{ECHO} (task)" in only and f"{ADD} (task)" not in only
    assert looker.get(changelist, {"task": "y" * 300}).status_code == 200
    assert other.id != mine.id
