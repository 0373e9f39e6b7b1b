"""Deployment versions on PostgreSQL: what each kind of run is pinned to, the claim that runs
only the versions a process serves, the queues a pinned run's messages go to, upgrades' moves."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from runtime.dispatch import CeleryDispatcher
from runtime.executor import ExecutionOutcome, execute
from runtime.forks import fork_run
from runtime.models import Event, EventType, Run, ServedVersion
from runtime.models.versions import active_counts_by_version
from runtime.registry import versions
from runtime.services import start_run
from runtime.store.runs.versions import mark_served_txn, move_runs_txn
from runtime.versions import routing
from runtime.versions.listing import leads_schedules
from runtime.worker import housekeeping
from tests.support.dispatch import Enqueued


def test_versions_a_start_records_this_process_version(enqueued: Enqueued) -> None:
    run, _ = start_run("examples.noop_loop", [1])
    assert versions.current() == "tests"  # config/test_settings.py
    assert Run.objects.get(id=run.id).app_version == "tests"
    child, _ = start_run("examples.noop_loop", [1], app_version="v-parent")
    assert Run.objects.get(id=child.id).app_version == "v-parent"
    assert routing.version_of(child.id) == "v-parent"  # remembered by the start


def test_versions_a_fork_takes_the_current_version(enqueued: Enqueued) -> None:
    old, _ = start_run("examples.noop_loop", [1], app_version="v-old")
    fork = fork_run(old.id, 1)
    assert Run.objects.get(id=fork.id).app_version == "tests"


def test_versions_a_run_of_another_version_is_not_claimed(enqueued: Enqueued) -> None:
    run, _ = start_run("examples.noop_loop", [1], app_version="v-other")
    assert execute(run.id).outcome == ExecutionOutcome.SKIPPED
    assert Run.objects.get(id=run.id).status == "pending"
    Run.objects.filter(id=run.id).update(app_version="")  # older than versions: anyone's
    assert execute(run.id).outcome == ExecutionOutcome.COMPLETED


def test_versions_served_versions_are_claimed(enqueued: Enqueued, settings: Any) -> None:
    run, _ = start_run("examples.noop_loop", [1], app_version="v-old")
    settings.FANFOLD = {**settings.FANFOLD, "SERVE_VERSIONS": "v-old"}
    assert execute(run.id).outcome == ExecutionOutcome.COMPLETED


def test_versions_pinned_messages_go_to_the_version_queue(settings: Any) -> None:
    pinned = {uuid.UUID(int=1): "v1", uuid.UUID(int=2): ""}
    dispatcher = CeleryDispatcher(version=pinned.__getitem__)
    assert dispatcher.run_queue(uuid.UUID(int=1)) == "fanfold@v1"
    assert dispatcher.branch_queue(uuid.UUID(int=1)) == "fanfold@v1"
    assert dispatcher.run_queue(uuid.UUID(int=2)) is None  # unpinned: as before versions
    settings.FANFOLD = {**settings.FANFOLD, "RUN_QUEUE": "runs"}
    assert dispatcher.run_queue(uuid.UUID(int=1)) == "runs@v1"
    assert dispatcher.branch_queue(uuid.UUID(int=1)) == "fanfold@v1"
    routed = CeleryDispatcher(route=lambda _: "reports", version=pinned.__getitem__)
    assert routed.run_queue(uuid.UUID(int=1)) == "reports@v1"


def test_versions_moving_runs_records_who_moved_them(enqueued: Enqueued) -> None:
    a, _ = start_run("examples.noop_loop", [1], app_version="v1")
    b, _ = start_run("examples.noop_loop", [1], app_version="v0")
    assert active_counts_by_version()["v1"] == {"pending": 1}
    moved = move_runs_txn([a.id, b.id], "v1", "v2", by={"username": "alice"})
    assert moved == [a.id]
    assert Run.objects.get(id=a.id).app_version == "v2"
    assert Run.objects.get(id=b.id).app_version == "v0"
    event = Event.objects.get(run_id=a.id, type=EventType.VERSION_UPGRADED)
    assert event.payload == {"from": "v1", "to": "v2", "by": {"username": "alice"}}
    assert Run.objects.get(id=a.id).last_seq == event.seq


def test_versions_only_the_latest_version_to_arrive_leads_schedule_ticks(settings: Any) -> None:
    now = timezone.now()
    assert leads_schedules(now)  # no worker seen lately: nobody to leave the ticks to
    mark_served_txn(["v-old"], "old:1", now - timedelta(hours=2))
    mark_served_txn(["v-old"], "old:1", now)  # live, arrived two hours ago
    mark_served_txn(["tests"], "new:1", now - timedelta(minutes=1))
    mark_served_txn(["tests"], "new:1", now)
    assert ServedVersion.objects.get(worker="old:1").first_seen == now - timedelta(hours=2)
    assert leads_schedules(now)
    settings.FANFOLD = {**settings.FANFOLD, "APP_VERSION": "v-old"}
    assert not leads_schedules(now)  # the old release's workers leave new runs to the new one
    later = now + timedelta(minutes=5)  # the new release's workers are gone (a rollback)
    mark_served_txn(["v-old"], "old:1", later)
    assert leads_schedules(later)


def test_versions_a_worker_of_an_older_version_takes_no_schedule_ticks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ticks: list[int] = []

    def tick_once() -> int:
        ticks.append(1)
        return 0

    monkeypatch.setattr(housekeeping.schedules, "tick_once", tick_once)
    arrived = timezone.now() + timedelta(seconds=30)  # after this worker's first heartbeat
    mark_served_txn(["v-newer"], "newer:1", arrived)
    housekeeping._Housekeeping().flow_pass()
    assert ticks == []
    assert ServedVersion.objects.filter(version="tests").exists()  # it did record itself

    ServedVersion.objects.filter(version="v-newer").delete()  # v-newer's workers are gone
    housekeeping._Housekeeping().flow_pass()
    assert ticks == [1]
