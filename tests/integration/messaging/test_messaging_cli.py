"""`manage.py fanfold send` and `fanfold signal`: a message to a run, a signal to its waiters;
bad JSON, an unknown run or a finished one is a CommandError (exit status 1 from manage.py)."""

from __future__ import annotations

import getpass
import json
import os
import subprocess
import sys
import uuid
from io import StringIO

import messaging_flows  # noqa: F401  (registers the workflows)
import pytest
from django.core.management import CommandError, call_command

from bench.workers import ROOT, database_url
from runtime import start
from runtime.models import Event, Message, Signal
from runtime.testing import InMemoryDispatcher

# Who the CLI's actions are recorded as: the login that ran the command.
CLI = {"user_id": None, "username": getpass.getuser(), "via": "cli"}


def fanfold(*args: str) -> str:
    out = StringIO()
    call_command("fanfold", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_messaging_cli_send_delivers_once_per_idempotency_key(runs: InMemoryDispatcher) -> None:
    run = start("tests.msg.inbox", "approval", 1)
    runs.join()
    out = fanfold("send", str(run.id), "approval", '{"by": "ana"}', "--idempotency-key", "m-1")
    assert out.startswith("message ") and str(run.id) in out
    repeated = ("send", str(run.id), "approval", '{"by": "bo"}', "--idempotency-key", "m-1")
    again = json.loads(fanfold(*repeated, "--json"))
    assert again["created"] is False
    runs.join()
    assert run.wait(timeout=5) == [{"by": "ana"}]
    assert Message.objects.filter(run_id=run.id).count() == 1
    received = Event.objects.get(run_id=run.id, type="message_received")
    assert received.payload["by"] == CLI


def test_messaging_cli_signal_reports_the_runs_that_took_it(runs: InMemoryDispatcher) -> None:
    waiting = start("tests.msg.paid", "cli-42")
    runs.join()
    out = fanfold("signal", "payment.settled", '{"order_id": "cli-42", "amount": 10}')
    assert "taken by 1 run" in out
    repeat = fanfold("signal", "payment.settled", '{"order_id": "cli-42"}', "--json")
    assert json.loads(repeat)["delivered"] == 0
    runs.join()
    assert waiting.wait(timeout=5) == {"order_id": "cli-42", "amount": 10}
    assert Event.objects.get(run_id=waiting.id, type="signal_received").payload["by"] == CLI
    keyed = ("signal", "payment.settled", "{}", "--idempotency-key", "s-1", "--json")
    assert json.loads(fanfold(*keyed))["created"] is True
    assert json.loads(fanfold(*keyed))["created"] is False
    assert Signal.objects.filter(idempotency_key="s-1").count() == 1


@pytest.mark.parametrize(
    "args",
    [
        ("send", "RUN", "t", "{not json"),
        ("send", "RUN", "t", "NaN"),
        ("signal", "payment.settled", "[1,"),
        ("signal", "payment.settled", "[" * 100_000),
    ],
    ids=["send-bad-json", "send-nan", "signal-bad-json", "signal-too-deep"],
)
def test_messaging_cli_refuses_bad_json(runs: InMemoryDispatcher, args: tuple[str, ...]) -> None:
    run = start("tests.msg.inbox", "t", 1)
    args = tuple(str(run.id) if a == "RUN" else a for a in args)
    with pytest.raises(CommandError, match=r"JSON|nested"):
        fanfold(*args)
    assert not Message.objects.exists() and not Signal.objects.exists()


def test_messaging_cli_refuses_an_unknown_or_finished_run(runs: InMemoryDispatcher) -> None:
    with pytest.raises(CommandError, match="not_found"):
        fanfold("send", str(uuid.uuid4()), "t", "1")
    with pytest.raises(CommandError, match="not_found"):
        fanfold("send", "not-a-run-id", "t", "1")
    done = start("tests.msg.echo", 1)
    runs.join()
    assert done.wait(timeout=5) == 1
    with pytest.raises(CommandError, match="finished"):
        fanfold("send", str(done.id), "t", "1")


def test_messaging_cli_errors_exit_non_zero(runs: InMemoryDispatcher) -> None:
    command = [sys.executable, "manage.py", "fanfold", "send", str(uuid.uuid4()), "t"]
    env = {**os.environ, "DATABASE_URL": database_url()}
    for value, expected in (("{oops", "not valid JSON"), ("1", "not_found")):
        done = subprocess.run([*command, value], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=120, check=False)  # fmt: skip
        assert done.returncode != 0
        assert expected in done.stderr
