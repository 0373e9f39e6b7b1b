"""Deleting runs: steps and events go with their run, even when a checkpoint races the delete.

Steps and events reference their run without a database constraint, so these tests are what
stands between a deletion and orphaned rows.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import closing
from typing import Any

import pytest
from django.db.models.deletion import Collector
from django.db.models.sql.subqueries import DeleteQuery
from run_records import noop_step_checkpoint

from runtime.core.errors import LeaseLost
from runtime.models import Event, Run, Step
from runtime.services import start_run
from runtime.store.history.sink import DatabaseSink


def write_step(run: Run, position: int) -> None:
    with closing(DatabaseSink()) as sink:
        sink.write_batch([noop_step_checkpoint(run.id, position)])


def rows_of(run: Run) -> tuple[int, int]:
    return Step.objects.filter(run_id=run.id).count(), Event.objects.filter(run_id=run.id).count()


@pytest.fixture
def step_racing_the_run_delete(
    monkeypatch: pytest.MonkeyPatch, leased_run: Run
) -> Iterator[Callable[[], list[BaseException | None]]]:
    """Right after a delete has removed the run's steps and events, and before it removes
    the run, another thread checkpoints a step of that run; yields how that write ended."""
    outcome: list[BaseException | None] = []
    real: Callable[..., Any] = DeleteQuery.delete_batch

    def checkpoint() -> None:
        try:
            write_step(leased_run, 2)
        except BaseException as exc:  # the test inspects whatever it was
            outcome.append(exc)
        else:
            outcome.append(None)

    racer = threading.Thread(target=checkpoint)

    def delete_batch(query: DeleteQuery, pk_list: list[Any], using: str) -> Any:
        if query.model is Run and not racer.is_alive() and not outcome:
            racer.start()
            racer.join(1.0)  # without the run's row lock the write commits here
        return real(query, pk_list, using)

    def ended() -> list[BaseException | None]:
        racer.join(10)
        return outcome

    monkeypatch.setattr(DeleteQuery, "delete_batch", delete_batch)
    yield ended
    racer.join(10)


def test_deleting_runs_deletes_their_steps_and_events(leased_run: Run) -> None:
    other, _ = start_run("examples.noop_loop", [2])
    write_step(leased_run, 1)

    Run.objects.filter(id=leased_run.id).delete()

    assert rows_of(leased_run) == (0, 0)
    assert rows_of(other) == (0, 1)  # only its run_created event


@pytest.mark.parametrize("how", ["queryset", "instance"])
def test_a_checkpoint_racing_a_run_delete_writes_nothing(
    how: str,
    leased_run: Run,
    step_racing_the_run_delete: Callable[[], list[BaseException | None]],
) -> None:
    write_step(leased_run, 1)

    if how == "queryset":
        Run.objects.filter(id=leased_run.id).delete()
    else:
        Run.objects.get(id=leased_run.id).delete()

    assert rows_of(leased_run) == (0, 0)
    assert [type(exc) for exc in step_racing_the_run_delete()] == [LeaseLost]


def test_a_run_that_starts_matching_after_the_lock_is_not_deleted(
    monkeypatch: pytest.MonkeyPatch, leased_run: Run
) -> None:
    late: list[Run] = []
    real: Callable[..., Any] = Collector.collect

    def collect(collector: Collector, objs: Any, *args: Any, **kwargs: Any) -> Any:
        if not late:  # after the runs were locked, before Django collects what to delete

            def start() -> None:
                late.append(start_run("examples.noop_loop", [2])[0])

            starter = threading.Thread(target=start)
            starter.start()
            starter.join(10)
        return real(collector, objs, *args, **kwargs)

    monkeypatch.setattr(Collector, "collect", collect)
    Run.objects.filter(workflow="examples.noop_loop").delete()

    assert not Run.objects.filter(id=leased_run.id).exists()
    assert [run.id for run in Run.objects.all()] == [late[0].id]  # not locked: left alone
    assert rows_of(late[0]) == (0, 1)
