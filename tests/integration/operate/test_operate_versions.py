"""`fanfold versions`: runs in flight by version, checked upgrades, retiring a version."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import operate_workflows as flows
import pytest
from django.core.management import CommandError, call_command

from runtime.executor import execute
from runtime.models import Event, EventType, Run, RunStatus, ServedVersion
from runtime.observe.versions import version_rows
from runtime.services import start_run
from runtime.versions.listing import heartbeat


def _fanfold(*args: str) -> Any:
    out = StringIO()
    call_command("fanfold", *args, stdout=out, stderr=StringIO())
    return json.loads(out.getvalue()) if "--json" in args else out.getvalue()


def _v1_runs(settings: Any) -> tuple[list[Run], Run]:
    """Two runs of v1 waiting for a callback, and one asleep whose code changed since."""
    settings.FANFOLD = {**settings.FANFOLD, "SERVE_VERSIONS": "v1"}  # run them as a v1 worker
    waiting = [start_run("tests.operate.waits", app_version="v1")[0] for _ in range(2)]
    asleep, _ = start_run("tests.operate.patched", app_version="v1")
    for run in [*waiting, asleep]:
        execute(run.id)
    settings.FANFOLD = {**settings.FANFOLD, "SERVE_VERSIONS": ""}
    flows.VERSION["code"] = 3  # b became c without a patch: the asleep run no longer replays
    return waiting, asleep


def test_versions_lists_runs_in_flight_and_stranded(settings: Any) -> None:
    _v1_runs(settings)
    rows = {row["version"]: row for row in _fanfold("versions", "--json")}
    assert rows["v1"] == {
        "version": "v1", "current": False, "pending": 0, "running": 0, "waiting": 3,
        "stranded": 3, "workers": [],
    }  # fmt: skip
    assert rows["tests"]["current"] and rows["tests"]["stranded"] == 0
    settings.FANFOLD = {**settings.FANFOLD, "SERVE_VERSIONS": "v1"}
    heartbeat()  # a worker serving v1 is alive: not stranded any more
    v1 = next(row for row in version_rows() if row["version"] == "v1")
    assert v1["stranded"] == 0 and len(v1["workers"]) == 1
    assert ServedVersion.objects.filter(version="v1").count() == 1
    lines = [line.split() for line in _fanfold("versions").splitlines()]
    assert lines[0] == [
        "VERSION",
        "CURRENT",
        "PENDING",
        "RUNNING",
        "WAITING",
        "STRANDED",
        "WORKERS",
    ]
    rows = {line[0]: line[1:] for line in lines[1:]}
    assert rows["tests"][0] == "yes"
    assert rows["v1"][1:5] == ["0", "0", "3", "0"] and rows["v1"][5] == v1["workers"][0]


def test_versions_upgrade_moves_the_runs_that_replay_clean(settings: Any) -> None:
    waiting, asleep = _v1_runs(settings)
    dry = _upgrade("v1", "--dry-run")
    assert sorted(dry["moved"]) == sorted(str(r.id) for r in waiting)
    assert [r["run_id"] for r in dry["refused"]] == [str(asleep.id)]
    assert dry["refused"][0]["mismatch"]["position"] == 2
    assert dry["refused"][0]["mismatch"]["reason"] == "name"
    assert set(Run.objects.values_list("app_version", flat=True)) == {"v1"}  # dry: nothing

    done = _upgrade("v1")
    assert sorted(done["moved"]) == sorted(str(r.id) for r in waiting)
    for run in waiting:
        assert Run.objects.get(id=run.id).app_version == "tests"
        event = Event.objects.get(run_id=run.id, type=EventType.VERSION_UPGRADED)
        assert event.payload["from"] == "v1" and event.payload["to"] == "tests"
        assert event.payload["by"]["via"] == "cli"
    assert Run.objects.get(id=asleep.id).app_version == "v1"  # refused: stays

    cancelled = _fanfold("versions", "retire", "v1", "--cancel", "--json")
    assert cancelled == {"cancelled": [str(asleep.id)]}
    assert Run.objects.get(id=asleep.id).status == RunStatus.CANCELLED


def _upgrade(*args: str) -> Any:
    out = StringIO()
    with pytest.raises(SystemExit) as exited:  # exit status 1: runs were refused
        call_command("fanfold", "versions", "upgrade", *args, "--json", stdout=out)
    assert exited.value.code == 1
    return json.loads(out.getvalue())


@pytest.mark.parametrize(
    "args",
    [
        ("versions", "upgrade", "not a version"),
        ("versions", "upgrade", "v1", "--to", "../x"),
        ("versions", "upgrade", "tests"),  # already there
        ("versions", "retire", "bad/name", "--cancel"),
    ],
)
def test_versions_bad_input_is_an_error(args: tuple[str, ...]) -> None:
    with pytest.raises(CommandError):
        call_command("fanfold", *args, stdout=StringIO(), stderr=StringIO())
