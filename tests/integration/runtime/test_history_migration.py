"""The migration to a partitioned history, on a database that has history: every run stays
readable, new runs go on, and the migration goes back."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import lifecycle_flows  # noqa: F401  (registers the workflows)
import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from runtime.core.run_ids import new_run_id
from runtime.executor import Execution, ExecutionOutcome
from runtime.handles import get_run
from runtime.lifecycle.retention import older_than, purge
from runtime.models import Event, Run
from runtime.services import start_run
from runtime.store.lifecycle.partitions import PARTITIONED, is_partitioned

pytestmark = [
    pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL is converted"),
    pytest.mark.django_db(transaction=True),
]

BEFORE = [("runtime", "0014_approval_events")]


def _latest() -> list[tuple[str, str]]:
    executor = MigrationExecutor(connection)
    return [key for key in executor.loader.graph.leaf_nodes() if key[0] == "runtime"]


@pytest.fixture
def previous_release() -> Iterator[Any]:
    """The schema of the release before partitioning (its models, as `apps`); migrated
    forward again afterwards whatever the test did."""
    latest = _latest()
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    try:
        yield executor.loader.project_state(BEFORE).apps
    finally:
        MigrationExecutor(connection).migrate(latest)


def _history(apps: Any, run_id: uuid.UUID, status: str, events: int) -> None:
    """A run of the previous release with a row in every per-run table."""
    now = timezone.now() - timedelta(days=60)
    model = apps.get_model
    model("runtime", "Run").objects.create(
        id=run_id, workflow="tests.lifecycle.tell", input={"args": ["old"], "kwargs": {}},
        status=status, result={"done": True} if status == "completed" else None,
        created_at=now, updated_at=now, started_at=now,
        finished_at=now if status == "completed" else None, last_seq=events,
    )  # fmt: skip
    step = uuid.uuid5(run_id, "1")
    model("runtime", "Step").objects.create(
        id=step, run_id=run_id, position=1, name="tests.lifecycle.echo", kind="step",
        status="completed", attempt=1, result={"v": 1}, created_at=now, callback_token=None,
    )  # fmt: skip
    event = model("runtime", "Event")
    event.objects.bulk_create(
        event(run_id=run_id, seq=n, type="step_completed", step_id=step, payload={"n": n},
              created_at=now)
        for n in range(1, events + 1)
    )  # fmt: skip
    model("runtime", "FanoutGroup").objects.create(
        id=uuid.uuid5(run_id, "g"), run_id=run_id, first_position=2, total=1, released=1,
        failure_limit=0, created_at=now,
    )  # fmt: skip
    model("runtime", "StreamChunk").objects.create(
        run_id=run_id, stream="default", seq=1, value={"chunk": 1}, created_at=now
    )
    model("runtime", "Message").objects.create(
        run_id=run_id, topic="t", value={"m": 1}, created_at=now
    )
    model("runtime", "RunValue").objects.create(
        run_id=run_id, key="k", value={"v": 1}, position=1, updated_at=now
    )
    model("runtime", "SignalWait").objects.create(
        run_id=run_id, position=3, name="s", match_key="0" * 64, accepts_from=now,
        created_at=now,
    )  # fmt: skip


def test_history_migration_keeps_every_run_readable(
    previous_release: Any, run_now: Callable[..., Execution]
) -> None:
    assert not is_partitioned(connection.alias)
    old = [uuid.uuid4() for _ in range(20)]
    in_band = new_run_id()  # an old id that happens to lie in this week's range
    for n, run_id in enumerate([*old, in_band]):
        _history(previous_release, run_id, "completed" if n % 2 else "waiting", events=5 + n)
    last_event = previous_release.get_model("runtime", "Event").objects.order_by("-id")[0].id

    MigrationExecutor(connection).migrate(_latest())

    assert is_partitioned(connection.alias)
    for n, run_id in enumerate([*old, in_band]):
        run = get_run(run_id)
        assert [e.seq for e in run.events()] == list(range(1, 6 + n))
        assert [(s.position, s.result) for s in run.steps()] == [(1, {"v": 1})]
        for model in PARTITIONED:
            assert model._default_manager.filter(run_id=run_id).count() == 1 or model is Event
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(DISTINCT run_id) FROM runtime_event_rest")
        assert cursor.fetchone()[0] == 20  # the old ids; the in-band one is in its week's
    fresh, _ = start_run("tests.lifecycle.tell", ["new"])
    assert run_now(fresh.id).outcome is ExecutionOutcome.COMPLETED
    assert Event.objects.filter(run_id=fresh.id).order_by("id")[0].id > last_event
    report = purge(older_than(timedelta(days=30)))  # the old runs go by row deletes
    assert report.runs == 10 and Run.objects.count() == 12


def test_history_migration_goes_back_to_plain_tables(previous_release: Any) -> None:
    run_id = uuid.uuid4()
    _history(previous_release, run_id, "completed", events=3)
    executor = MigrationExecutor(connection)
    executor.migrate(_latest())
    assert is_partitioned(connection.alias)

    MigrationExecutor(connection).migrate(BEFORE)

    assert not is_partitioned(connection.alias)
    events = previous_release.get_model("runtime", "Event").objects.filter(run_id=run_id)
    assert sorted(events.values_list("seq", flat=True)) == [1, 2, 3]
