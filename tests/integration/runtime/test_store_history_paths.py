"""The two paths of a history write on PostgreSQL, one statement form: the one-round-trip path
and the transaction path write the same rows."""

from __future__ import annotations

import uuid
from contextlib import closing
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone
from run_records import events, run_row

from runtime.checkpoint.batching import Checkpoint
from runtime.core.identity import step_id
from runtime.core.writes import (
    EventDraft,
    FanoutGroupRow,
    HistoryWrite,
    LeaseGuard,
    RunPatch,
    StepRow,
)
from runtime.models import FanoutGroup, Run, Step
from runtime.services import start_run
from runtime.store.history import pg_statements
from runtime.store.history.parts import STEP_UPDATE_FIELDS
from runtime.store.history.sink import DatabaseSink


def _write(run: Run, at: datetime) -> HistoryWrite:
    """A part with a run patch (so not plain), step rows of every column kind, events and a
    fan-out group."""
    rows, drafts = [], []
    for position in (1, 2, 3):
        sid = step_id(run.id, position)
        rows.append(
            StepRow(
                sid,
                position,
                "mixed",
                "step",
                "pending",
                0,
                at,
                input={"i": position},
                result=["r", position] if position != 2 else None,
                error={"type": "E", "message": "é"} if position == 2 else None,
                started_at=at,
                wake_at=at + timedelta(seconds=position),
            )
        )
        drafts.append(EventDraft("step_created", at, sid, {"position": position, "n": None}))
    drafts.append(EventDraft("run_started", at, None, {}))
    group = FanoutGroupRow(uuid.uuid5(run.id, "g"), 1, 3, 2, None, 0, at)
    patch = RunPatch(status="running", started_at=at, wake_at=at + timedelta(minutes=1))
    return HistoryWrite(
        run.id, LeaseGuard("mine"), tuple(drafts), tuple(rows), patch, wake=True, fanouts=(group,)
    )


def _written(run: Run) -> tuple[Any, ...]:
    steps = list(
        Step.objects.filter(run_id=run.id)
        .order_by("position")
        .values_list("position", "input", "created_at", *STEP_UPDATE_FIELDS)
    )
    logged = [(e.seq, e.type, e.payload, e.created_at, e.step_id is None) for e in events(run.id)]
    group = list(
        FanoutGroup.objects.filter(run_id=run.id).values_list(
            "first_position", "total", "released", "succeeded", "need", "created_at"
        )
    )
    row = run_row(run.id)
    return steps, logged[1:], group, (row.last_seq, row.status, row.wakeups, row.wake_at)


@pytest.fixture
def two_runs() -> tuple[Run, Run]:
    runs = [start_run("examples.noop_loop", [1])[0] for _ in range(2)]
    Run.objects.filter(id__in=[r.id for r in runs]).update(
        lease_token="mine", lease_expires_at=timezone.now()
    )
    return runs[0], runs[1]


def test_store_history_paths_write_the_same_rows(
    two_runs: tuple[Run, Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    fast, portable = two_runs
    at = timezone.now().replace(microsecond=123456)
    with closing(DatabaseSink()) as sink:
        sink.write_batch([Checkpoint(session="fast", payload=_write(fast, at), sync=True)])
        monkeypatch.setattr(pg_statements, "write_parts", lambda *args: None)
        sink.write_batch([Checkpoint(session="txn", payload=_write(portable, at), sync=True)])

    written = _written(fast)
    assert written == _written(portable)
    steps, logged, group, run = written
    assert [s[5] for s in steps] == ["pending"] * 3 and steps[1][8] == {"type": "E", "message": "é"}
    assert [seq for seq, *_ in logged] == [2, 3, 4, 5]
    assert group == [(1, 3, 2, 0, None, at)]
    checks = FanoutGroup.objects.filter(run_id__in=[fast.id, portable.id]).values_list("check_at")
    assert [check_at > at for (check_at,) in checks] == [True, True]  # the sink's now + a lease
    assert run == (5, "running", 1, at + timedelta(minutes=1))
