"""The database sink writes on a connection of its own, from whichever thread holds the turn."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db import connections, transaction
from django.utils import timezone
from run_records import events

import runtime.store
from runtime.bench.sinkfloor import _noop_step
from runtime.checkpoint.batching import Checkpoint
from runtime.core.errors import LeaseLost
from runtime.core.writes import HistoryWrite, LeaseGuard
from runtime.models import Run, Step
from runtime.services import start_run

TOKEN = "mine"


@pytest.fixture
def sink() -> Iterator[runtime.store.DatabaseSink]:
    own = runtime.store.DatabaseSink()
    yield own
    own.close()


@pytest.fixture
def leased_run() -> Run:
    run, _ = start_run("examples.noop_loop", [1])
    Run.objects.filter(id=run.id).update(lease_token=TOKEN, lease_expires_at=timezone.now())
    return run


def step_write(run: Run, position: int) -> Checkpoint:
    write = _noop_step(run.id, position)
    write = HistoryWrite(run.id, LeaseGuard(TOKEN), write.events, write.steps)
    return Checkpoint(session="s", payload=write, size=1024, sync=True)


class Rollback(Exception):
    pass


def test_a_caller_inside_its_own_transaction_still_commits_its_checkpoint(
    sink: runtime.store.DatabaseSink, leased_run: Run
) -> None:
    own = connections["default"]

    with pytest.raises(Rollback), transaction.atomic():
        now = timezone.now()
        Run.objects.create(workflow="rolled.back", created_at=now, updated_at=now)
        sink.write_batch([step_write(leased_run, 1)])
        assert connections["default"] is own  # the thread's connection is given back
        raise Rollback

    assert Step.objects.filter(run_id=leased_run.id).count() == 1
    assert not Run.objects.filter(workflow="rolled.back").exists()


def test_a_failed_batch_gives_the_thread_its_own_connection_back(
    sink: runtime.store.DatabaseSink, leased_run: Run
) -> None:
    own = connections["default"]
    Run.objects.filter(id=leased_run.id).update(lease_token="someone-else")

    with pytest.raises(LeaseLost):
        sink.write_batch([step_write(leased_run, 1)])

    assert connections["default"] is own
    assert [e.type for e in events(leased_run.id)] == ["run_created"]
