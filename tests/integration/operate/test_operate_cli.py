"""`manage.py fanfold`: runs, show, cancel, fork, retry and replay, for people and scripts."""

from __future__ import annotations

import getpass
import json
from io import StringIO
from typing import Any

import operate_workflows as flows
import pytest
from django.core.management import CommandError, call_command

from runtime.executor import execute
from runtime.models import Event, Run
from runtime.services import start_run
from runtime.testing import InMemoryDispatcher


def fanfold(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("fanfold", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def _finished(dispatcher: InMemoryDispatcher, workflow: str, *args: Any) -> Run:
    run, _ = start_run(workflow, list(args))
    dispatcher.join()
    return Run.objects.get(id=run.id)


def test_cli_runs_lists_a_table_and_json_with_filters(dispatcher: InMemoryDispatcher) -> None:
    done = _finished(dispatcher, "tests.operate.three")
    flows.FAIL.add("a")
    failed = _finished(dispatcher, "tests.operate.three")
    out, _ = fanfold("runs")
    assert out.splitlines()[0].split()[:3] == ["RUN", "WORKFLOW", "STATUS"]
    assert str(done.id) in out and str(failed.id) in out
    listed = json.loads(fanfold("runs", "--status", "failed", "--json")[0])
    assert [r["id"] for r in listed] == [str(failed.id)]
    assert json.loads(fanfold("runs", "--workflow", "nope", "--json")[0]) == []


def test_cli_show_prints_the_run_and_its_steps(dispatcher: InMemoryDispatcher) -> None:
    run = _finished(dispatcher, "tests.operate.three")
    out, _ = fanfold("show", str(run.id))
    assert "status    completed" in out and "tests.operate.act" not in out
    assert [line.split()[1] for line in out.splitlines() if line[:1].isdigit()] == ["a", "b", "c"]
    shown = json.loads(fanfold("show", str(run.id), "--json")[0])
    assert [s["name"] for s in shown["steps"]] == ["a", "b", "c"]
    assert shown["result"] == ["A", "B", "C"]


def test_cli_fork_retry_and_cancel(dispatcher: InMemoryDispatcher) -> None:
    flows.FAIL.add("c")
    source = _finished(dispatcher, "tests.operate.three")
    flows.FAIL.clear()
    forked = json.loads(fanfold("fork", str(source.id), "--from", "2", "--json")[0])
    assert (forked["forked_from"], forked["forked_from_position"]) == (str(source.id), 2)
    retried = json.loads(fanfold("retry", str(source.id), "--json")[0])
    assert retried["forked_from_position"] == 3
    out, _ = fanfold("fork", str(source.id), "--from", "1", "--args", '["x-"]')
    assert "status    pending" in out and "forked    from" in out
    waiting, _ = start_run("tests.operate.waits")
    execute(waiting.id)
    assert json.loads(fanfold("cancel", str(waiting.id), "--json")[0])["status"] == "cancelled"
    cli = {"user_id": None, "username": getpass.getuser(), "via": "cli"}
    assert Event.objects.get(run_id=waiting.id, type="run_cancelled").payload["by"] == cli
    for new in (forked, retried):
        assert Event.objects.get(run_id=new["id"], type="run_created").payload["by"] == cli


def test_cli_errors_exit_with_the_code_and_json_envelope(dispatcher: InMemoryDispatcher) -> None:
    run = _finished(dispatcher, "tests.operate.three")
    with pytest.raises(CommandError, match="position_out_of_range"):
        fanfold("fork", str(run.id), "--from", "9")
    with pytest.raises(CommandError, match="nothing_to_retry"):
        fanfold("retry", str(run.id))
    with pytest.raises(CommandError, match="run_finished"):
        fanfold("cancel", str(run.id))
    out = StringIO()
    with pytest.raises(CommandError, match="not_found"):
        call_command("fanfold", "show", "nope", "--json", stdout=out, stderr=StringIO())
    assert json.loads(out.getvalue())["error"]["code"] == "not_found"


def test_cli_replay_passes_unchanged_code_and_exits_1_on_a_mismatch(
    dispatcher: InMemoryDispatcher,
) -> None:
    runs = [_finished(dispatcher, "tests.operate.three", str(i)) for i in range(3)]
    other = _finished(dispatcher, "tests.operate.fanned", ["x"])
    out, err = fanfold("replay")
    assert "4 runs replayed" in out and "0 mismatched" in out
    assert "[" + "#" * 30 + "] 4/4" in err  # the progress bar, on stderr

    flows.VERSION["code"] = 2  # rename step b
    with pytest.raises(SystemExit) as exited:
        fanfold("replay", "--workflow", "tests.operate.three")
    assert exited.value.code == 1
    stdout = StringIO()
    with pytest.raises(SystemExit):
        call_command("fanfold", "replay", "--json", "--limit", "2", stdout=stdout)
    report = json.loads(stdout.getvalue())
    assert (report["checked"], report["mismatched"]) == (2, 1)  # the newest two: fanned, three
    assert report["mismatches"][0]["mismatch"]["reason"] == "name"
    out, _ = fanfold("replay", "--run", str(other.id), "--status", "completed")
    assert "1 runs replayed" in out
    assert runs
