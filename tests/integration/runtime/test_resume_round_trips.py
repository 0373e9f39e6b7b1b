"""What one resume costs in round trips on PostgreSQL: a suspend that lost the race with a
wake-up is named by one read (not written again in a transaction), and the wake-ups it read
go to the executor's next pass."""

from __future__ import annotations

from typing import Any

import pytest
from django.db.models import F
from run_records import LEASE_TOKEN, run_row

from runtime import store
from runtime.checkpoint.batching import Checkpoint
from runtime.checkpoint.errors import CheckpointFailed
from runtime.core.errors import LeaseLost, WokenUp
from runtime.core.writes import EventDraft, HistoryWrite, RunPatch, SuspendGuard
from runtime.models import Run, RunStatus
from runtime.store.history import history_txn, sink
from runtime.store.history.parts import run_parts


def _suspend(run: Run, wakeups: int, *events: EventDraft) -> HistoryWrite:
    patch = RunPatch(status=RunStatus.WAITING, wake_at=None, release_lease=True)
    return HistoryWrite(run.id, SuspendGuard(LEASE_TOKEN, wakeups), events, run=patch)


def _no_transaction_path(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the transaction path wrote the suspend again")

    monkeypatch.setattr(sink, "write_parts_txn", refused)


def test_a_woken_suspend_is_named_by_one_read_with_its_wakeups(
    leased_run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    Run.objects.filter(id=leased_run.id).update(wakeups=F("wakeups") + 3)
    _no_transaction_path(monkeypatch)

    with pytest.raises(CheckpointFailed) as info:
        store.writer().write(Checkpoint("woken", _suspend(leased_run, 0), sync=True))

    woken = info.value.__cause__
    assert isinstance(woken, WokenUp) and woken.wakeups == 3
    row = run_row(leased_run.id)
    assert row.status != RunStatus.WAITING and row.lease_token == LEASE_TOKEN
    store.writer().reset_session("woken")


def test_a_suspend_whose_lease_went_is_named_lost_by_the_same_read(
    leased_run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    Run.objects.filter(id=leased_run.id).update(lease_token="someone-else")
    _no_transaction_path(monkeypatch)

    with pytest.raises(CheckpointFailed) as info:
        store.writer().write(Checkpoint("lost", _suspend(leased_run, 0), sync=True))

    cause = info.value.__cause__
    assert isinstance(cause, LeaseLost) and not isinstance(cause, WokenUp)
    store.writer().reset_session("lost")


def test_only_a_lone_failed_suspend_is_read_instead_of_written_again(leased_run: Run) -> None:
    wakeups = run_row(leased_run.id).wakeups
    (plain,) = run_parts([("s", _suspend(leased_run, wakeups))])
    assert history_txn.suspend_failure(plain) is None  # neither woken nor lost: no verdict
    Run.objects.filter(id=leased_run.id).update(wakeups=F("wakeups") + 1)
    assert isinstance(history_txn.suspend_failure(plain), WokenUp)
    event = EventDraft("timer_fired", run_row(leased_run.id).created_at)
    (with_events,) = run_parts([("s", _suspend(leased_run, wakeups, event))])
    assert history_txn.suspend_failure(with_events) is None  # the transaction path decides
