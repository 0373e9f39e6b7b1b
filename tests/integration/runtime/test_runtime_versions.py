"""Deployment versions on PostgreSQL: what each kind of run is pinned to, the claim that runs
only the versions a process serves, the queues a pinned run's messages go to, upgrades' moves."""

from __future__ import annotations

import uuid
from typing import Any

from runtime.dispatch import CeleryDispatcher
from runtime.executor import ExecutionOutcome, execute
from runtime.forks import fork_run
from runtime.models import Event, EventType, Run
from runtime.models.versions import active_counts_by_version
from runtime.registry import versions
from runtime.services import start_run
from runtime.store.runs.versions import move_runs_txn
from runtime.versions import routing
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
