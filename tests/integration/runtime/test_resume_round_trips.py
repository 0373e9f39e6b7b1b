"""What one resume costs in round trips on PostgreSQL: a suspend commits in one statement with
the writes that led to it; one that lost the race with a wake-up still commits them, and its
receipt carries the wake-ups for the executor's next pass."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from django.db import transaction
from django.db.models import F
from django.utils import timezone
from run_records import LEASE_TOKEN, run_row

from runtime import store
from runtime.checkpoint.batching import Checkpoint
from runtime.checkpoint.errors import CheckpointFailed
from runtime.core.errors import LeaseLost
from runtime.core.writes import (
    EventDraft,
    HistoryWrite,
    LeaseGuard,
    RunPatch,
    SuspendGuard,
    Woken,
)
from runtime.models import Event, Run, RunStatus
from runtime.store.history import history_txn, sink
from runtime.store.history.parts import run_parts


def _suspend(run: Run, wakeups: int, *events: EventDraft) -> HistoryWrite:
    patch = RunPatch(status=RunStatus.WAITING, wake_at=None, release_lease=True)
    return HistoryWrite(run.id, SuspendGuard(LEASE_TOKEN, wakeups), events, run=patch)


def _led_here(run: Run, announce: bool = False) -> HistoryWrite:
    """A pass's write before its suspend: an event, and the run marked running again (with
    `announce`, a notification: a statement more, so the batch goes as a pipeline)."""
    event = EventDraft("timer_fired", timezone.now())
    patch = RunPatch(status=RunStatus.RUNNING, wake_at=timezone.now())
    return HistoryWrite(run.id, LeaseGuard(LEASE_TOKEN), (event,), run=patch, announce=announce)


def _no_transaction_path(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the transaction path wrote the suspend")

    monkeypatch.setattr(sink, "write_parts_txn", refused)


def _write_session(session: str, *writes: HistoryWrite) -> list[object]:
    """`writes` as one session's: all but the last queued, the last waited for (one batch)."""
    writer = store.writer()
    cps = [Checkpoint(session, w, sync=False) for w in writes[:-1]]
    return writer.write_all([*cps, Checkpoint(session, writes[-1], sync=True)])


def test_a_suspend_commits_with_what_led_to_it_in_one_statement(
    leased_run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_transaction_path(monkeypatch)
    wakeups = run_row(leased_run.id).wakeups

    receipts = _write_session("s", _led_here(leased_run), _suspend(leased_run, wakeups))

    assert receipts[-1] is None
    row = run_row(leased_run.id)
    assert row.status == RunStatus.WAITING and row.wake_at is None
    assert row.lease_token is None and row.lease_owner is None
    assert Event.objects.filter(run_id=leased_run.id, type="timer_fired").count() == 1


@pytest.mark.parametrize("announce", [False, True], ids=["one statement", "a pipeline"])
def test_a_woken_suspend_still_commits_what_led_to_it_and_says_so(
    leased_run: Run, monkeypatch: pytest.MonkeyPatch, announce: bool
) -> None:
    wakeups = run_row(leased_run.id).wakeups
    Run.objects.filter(id=leased_run.id).update(wakeups=F("wakeups") + 3)
    _no_transaction_path(monkeypatch)

    led_here = _led_here(leased_run, announce)
    receipts = _write_session("w", led_here, _suspend(leased_run, wakeups))

    assert receipts[-1] == Woken(wakeups + 3)
    row = run_row(leased_run.id)
    assert row.status == RunStatus.RUNNING and row.wake_at is not None  # the earlier patch
    assert row.lease_token == LEASE_TOKEN and row.lease_expires_at is not None
    assert Event.objects.filter(run_id=leased_run.id, type="timer_fired").count() == 1


def test_a_suspend_whose_lease_went_fails_and_writes_nothing(leased_run: Run) -> None:
    wakeups = run_row(leased_run.id).wakeups
    Run.objects.filter(id=leased_run.id).update(lease_token="someone-else")

    with pytest.raises(CheckpointFailed) as info:
        _write_session("lost", _led_here(leased_run), _suspend(leased_run, wakeups))

    assert isinstance(info.value.__cause__, LeaseLost)
    assert not Event.objects.filter(run_id=leased_run.id, type="timer_fired").exists()
    assert run_row(leased_run.id).status != RunStatus.WAITING
    store.writer().reset_session("lost")


@pytest.mark.parametrize("woken", [False, True])
def test_the_transaction_path_decides_a_suspend_alike(leased_run: Run, woken: bool) -> None:
    wakeups = run_row(leased_run.id).wakeups
    if woken:
        Run.objects.filter(id=leased_run.id).update(wakeups=F("wakeups") + 1)
    parts = run_parts([("t", _led_here(leased_run)), ("t", _suspend(leased_run, wakeups))])
    assert len(parts) == 1  # one statement's worth: the suspend joined its session's writes

    now = timezone.now()
    with transaction.atomic():
        lost = history_txn.write_parts_txn(parts, now, now)

    row = run_row(leased_run.id)
    assert lost == ({leased_run.id: wakeups + 1} if woken else {})
    assert row.status == (RunStatus.RUNNING if woken else RunStatus.WAITING)
    assert (row.lease_token is None) is not woken
    assert Event.objects.filter(run_id=leased_run.id, type="timer_fired").count() == 1


def test_a_suspend_after_its_own_session_woke_the_run_is_lost_as_if_another_had(
    leased_run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_transaction_path(monkeypatch)
    wakeups = run_row(leased_run.id).wakeups
    woke = replace(_led_here(leased_run), wake=True)  # e.g. a callback's result, posted here

    receipts = _write_session("own", woke, _suspend(leased_run, wakeups))

    assert receipts[-1] == Woken(wakeups + 1)
    row = run_row(leased_run.id)
    assert row.wakeups == wakeups + 1 and row.status == RunStatus.RUNNING
    assert row.lease_token == LEASE_TOKEN
