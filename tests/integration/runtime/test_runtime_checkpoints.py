"""The checkpoint store against real PostgreSQL: coalescing, group commit, failures, ordering."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone
from run_records import BodyCalls, event_types, events, run_row, step_at, steps

from runtime import step, store, workflow
from runtime.checkpoint.batching import Checkpoint
from runtime.checkpoint.errors import CheckpointFailed
from runtime.core.clock import FakeClock
from runtime.core.errors import LeaseLost
from runtime.core.identity import step_id
from runtime.core.writes import EventDraft, HistoryWrite, LeaseGuard, RunPatch
from runtime.executor import Execution, ExecutionOutcome, execute
from runtime.models import Event, Run, Step
from runtime.services import start_run

calls = BodyCalls()


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    calls.clear()
    yield


def rows_seen_elsewhere(run_id: str) -> list[list[Any]]:
    """The run's step rows as another connection sees them right now."""
    seen: list[list[Any]] = []

    def look() -> None:
        try:
            rows = Step.objects.filter(run_id=run_id).order_by("position")
            seen.extend([r.position, r.status, r.attempt] for r in rows)
        finally:
            connection.close()

    thread = threading.Thread(target=look)
    thread.start()
    thread.join()
    return seen


@step(name="tests.checkpoints.peek_at_most_once", at_most_once=True)
def peek_at_most_once(run_id: str) -> list[list[Any]]:
    calls.hit("peek")
    return rows_seen_elsewhere(run_id)


@step(name="tests.checkpoints.peek_at_least_once")
def peek_at_least_once(run_id: str) -> list[list[Any]]:
    calls.hit("peek")
    return rows_seen_elsewhere(run_id)


@step(name="tests.checkpoints.record")
def record(label: str) -> str:
    calls.hit(label)
    return label


@step(name="tests.checkpoints.steal_lease")
def steal_lease(run_id: str) -> str:
    calls.hit("steal")
    Run.objects.filter(id=run_id).update(lease_token="another-worker")
    return "stolen"


@workflow(name="tests.checkpoints.peeks")
def peeks(ctx: Any, at_most_once: bool) -> Any:
    peek = peek_at_most_once if at_most_once else peek_at_least_once
    return ctx.step(peek, str(ctx.run_id))


@workflow(name="tests.checkpoints.loses_lease")
def loses_lease(ctx: Any) -> str:
    ctx.step(record, "before")
    ctx.step(steal_lease, str(ctx.run_id))
    ctx.step(record, "after")
    return "done"


def test_checkpoints_at_most_once_start_is_committed_before_the_body_runs(
    run_now: Callable[..., Execution], fanfold_settings: Callable[..., None], sink: Any
) -> None:
    fanfold_settings(CHECKPOINT_ASYNC_WINDOW="5")  # async writes would linger: only sync flushes
    run, _ = start_run("tests.checkpoints.peeks", [True])
    assert run_now(run.id).outcome is ExecutionOutcome.COMPLETED
    assert run_row(run.id).result == [[1, "running", 1]]
    assert len(sink().committed) == 3  # run start + step start, completion, run end


def test_checkpoints_at_least_once_start_is_not_waited_for(
    run_now: Callable[..., Execution], fanfold_settings: Callable[..., None]
) -> None:
    fanfold_settings(CHECKPOINT_ASYNC_WINDOW="5")
    run, _ = start_run("tests.checkpoints.peeks", [False])
    assert run_now(run.id).outcome is ExecutionOutcome.COMPLETED
    assert run_row(run.id).result == []  # the start was still queued, with the completion
    assert step_at(run.id, 1).status == "completed"


def test_checkpoints_async_start_and_sync_completion_coalesce_into_one_transaction(
    run_now: Callable[..., Execution], fanfold_settings: Callable[..., None], sink: Any
) -> None:
    fanfold_settings(CHECKPOINT_ASYNC_WINDOW="5")
    run, _ = start_run("examples.noop_loop", [1])
    assert run_now(run.id).outcome is ExecutionOutcome.COMPLETED

    committed = sink().committed
    assert sink().transactions == 2
    assert [[cp.sync for cp in batch] for batch in committed] == [[False, False, True], [True]]
    step_writes = [cp.payload.steps[0] for cp in committed[0] if cp.payload.steps]
    assert [(w.status, w.attempt) for w in step_writes] == [("running", 1), ("completed", 1)]
    assert step_writes[0].id == step_writes[1].id
    assert event_types(run.id) == [
        "run_created",
        "run_started",
        "step_created",
        "step_started",
        "step_completed",
        "run_completed",
    ]


def test_checkpoints_concurrent_workflows_group_commit(sink: Any) -> None:
    runs = [start_run("examples.noop_loop", [40])[0] for _ in range(8)]
    clock = FakeClock()
    gate = threading.Barrier(len(runs))
    outcomes: dict[uuid.UUID, ExecutionOutcome] = {}

    def work(run_id: uuid.UUID) -> None:
        try:
            gate.wait()
            outcomes[run_id] = execute(run_id, clock=clock).outcome
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(r.id,)) for r in runs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert set(outcomes.values()) == {ExecutionOutcome.COMPLETED}
    for run in runs:
        assert [s.result for s in steps(run.id)] == list(range(40))
        events(run.id)  # dense per run despite the shared transactions
    sync_checkpoints = len(runs) * (40 + 1)  # every completion and every run end
    batches = sink().committed
    assert sink().transactions == len(batches) < sync_checkpoints
    shared = [b for b in batches if len({cp.session for cp in b if cp.sync}) > 1]
    assert shared, "no transaction held the synchronous checkpoints of two runs"


def test_checkpoints_lost_lease_stops_the_run_and_writes_nothing_after(
    run_now: Callable[..., Execution],
) -> None:
    run, _ = start_run("tests.checkpoints.loses_lease")
    assert run_now(run.id) == Execution(ExecutionOutcome.LOST)

    assert calls.snapshot() == {"before": 1, "steal": 1}  # the step after it never ran
    row = run_row(run.id)
    assert (row.status, row.lease_token, row.result) == ("running", "another-worker", None)
    assert [(s.position, s.status) for s in steps(run.id)] in (
        [(1, "completed")],
        [(1, "completed"), (2, "running")],  # the async start may have gone out alone
    )
    log = events(run.id)
    stolen_at = step_id(run.id, 2)
    assert [e.type for e in log if e.step_id == stolen_at] in ([], ["step_created", "step_started"])
    assert [e.type for e in log].count("step_completed") == 1
    assert not {"run_completed", "run_failed"} & {e.type for e in log}

    # The writer itself is healthy: other runs still complete.
    other, _ = start_run("examples.noop_loop", [2])
    assert run_now(other.id).outcome is ExecutionOutcome.COMPLETED


def test_checkpoints_failed_write_fails_its_caller_and_everything_after_it() -> None:
    run, _ = start_run("examples.noop_loop", [1])
    Run.objects.filter(id=run.id).update(lease_token="mine", lease_expires_at=timezone.now())
    writer = store.writer()
    session = f"{run.id}/test"

    def event(name: str, token: str) -> Checkpoint:
        write = HistoryWrite(
            run.id,
            LeaseGuard(token),
            (EventDraft("run_started", timezone.now(), None, {"marker": name}),),
            run=RunPatch(status="running"),
        )
        return Checkpoint(session=session, payload=write, size=256)

    writer.submit(event("stale", "not-mine"))  # queued; fails in the writer thread
    with pytest.raises(CheckpointFailed) as info:
        writer.write(event("good", "mine"))  # its own guard is fine, but it comes after
    assert isinstance(info.value.__cause__, LeaseLost)
    with pytest.raises(CheckpointFailed):
        writer.submit(event("later", "mine"))
    with pytest.raises(CheckpointFailed):
        writer.barrier(session)

    assert list(Event.objects.filter(run_id=run.id).values_list("seq", "type")) == [
        (1, "run_created")
    ]
    assert run_row(run.id).status == "pending"

    writer.reset_session(session)  # a new execution of the run may write again
    writer.write(event("fresh", "mine"))
    assert [e.payload.get("marker") for e in events(run.id)] == [None, "fresh"]
