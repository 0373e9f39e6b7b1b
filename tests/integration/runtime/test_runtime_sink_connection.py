"""The database sink writes on a connection of its own, from whichever thread holds the turn."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from celery.exceptions import SoftTimeLimitExceeded
from django.db import connection, connections, transaction
from django.utils import timezone
from run_records import events

import runtime.store
from runtime import pgsink
from runtime.bench.sinkfloor import _noop_step
from runtime.checkpoint.batching import Checkpoint
from runtime.checkpoint.errors import OutcomeUnknown
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


def test_an_interrupted_batch_has_an_unknown_outcome_and_the_next_one_reconnects(
    sink: runtime.store.DatabaseSink, leased_run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    sink.write_batch([step_write(leased_run, 1)])

    def interrupted(*args: object, **kwargs: object) -> bool:
        raise SoftTimeLimitExceeded()  # as Celery's signal handler raises it mid-statement

    with monkeypatch.context() as patched:
        patched.setattr(pgsink, "write_groups", interrupted)
        with pytest.raises(OutcomeUnknown):
            sink.write_batch([step_write(leased_run, 2)])

    sink.write_batch([step_write(leased_run, 3)])
    positions = Step.objects.filter(run_id=leased_run.id).values_list("position", flat=True)
    assert sorted(positions) == [1, 3]
    assert [e.seq for e in events(leased_run.id)] == list(range(1, 8))
    assert connection.vendor == "postgresql"
