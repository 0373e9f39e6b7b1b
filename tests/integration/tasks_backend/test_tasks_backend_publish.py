"""How a task's run leaves and runs, on real PostgreSQL: its message goes through the
background publisher after the run commits; a message lost there is sent again by the run
sweep; the execution claims the run and reads its history in one go; the task's step
completion commits with the run's end."""

from __future__ import annotations

import secrets
import threading
import uuid

import pytest
from django.db import connection, transaction
from django.utils import timezone

from runtime import dispatch
from runtime.core import run_batches
from runtime.dispatch import EXECUTE_RUN, EXECUTE_RUNS
from runtime.django_tasks.compat import TaskResultStatus
from runtime.executor import execute
from runtime.models import Run, Step
from runtime.recovery import run_sweep
from runtime.store.runs.run_statements import claim_run_with_history
from runtime.testing import use_dispatcher
from tests.support import sample_tasks as tasks
from tests.support.dispatch import LossyDispatcher
from tests.support.statements import statements_sent
from tests.support.waiting import wait_until


def test_tasks_backend_message_leaves_through_the_background_publisher() -> None:
    with use_dispatcher(LossyDispatcher()) as lossy:
        assert isinstance(lossy, LossyDispatcher)
        ids = [tasks.add.enqueue(i, 1).id for i in range(30)]
        assert dispatch.flush(10)
    carried: list[str] = []
    for m in lossy.broker.delivered:  # a start alone, or the starts held at send time together
        if m.task == EXECUTE_RUN:
            assert (m.args, m.idempotency_key) == ([m.args[0]], f"{m.args[0]}:start")
            carried += m.args
        else:
            assert m.task == EXECUTE_RUNS and 1 < len(m.args[0]) <= run_batches.MAX_RUNS
            assert m.idempotency_key == f"{m.args[0][0]}:start:n{len(m.args[0])}"
            carried += m.args[0]
    assert carried == ids  # each run once, in the order enqueued
    assert lossy.resent == []


def test_tasks_backend_enqueue_is_one_prepared_statement_flushed() -> None:
    tasks.add.enqueue(1, 1)  # the connection opened (its session set up) and the SQL known
    with statements_sent() as sent:
        result = tasks.add.enqueue(1, 2)
    # The run, its run_created event and its search attribute's pending row: one round trip,
    # committed with its WAL flushed (durable once enqueue returns).
    assert [prepared for _, prepared in sent] == [True]
    assert "synchronous_commit" not in sent[0][0]
    assert Run.objects.filter(id=uuid.UUID(result.id)).exists()


def test_tasks_backend_enqueues_in_a_row_leave_together_after_the_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A loop of enqueues is a stream even when each start is alone in its request: the next
    # ones wait out the publisher's linger (an hour here) and leave as one batch message.
    monkeypatch.setattr(run_batches, "LINGER_SECONDS", 3600.0)
    monkeypatch.setattr(run_batches, "MAX_LINGER_SECONDS", 3600.0)
    with use_dispatcher(LossyDispatcher()) as lossy:
        assert isinstance(lossy, LossyDispatcher)
        first = tasks.add.enqueue(0, 1).id
        wait_until(lambda: len(lossy.broker.delivered) == 1, interval=0.005)
        rest = [tasks.add.enqueue(i, 1).id for i in range(1, 4)]
        threading.Event().wait(0.2)
        assert len(lossy.broker.requests) == 1  # the rest linger
        assert dispatch.flush(10)  # a flush cuts the linger short
    assert [(m.task, m.args) for m in lossy.broker.delivered] == [
        (EXECUTE_RUN, [first]),
        (EXECUTE_RUNS, [rest]),
    ]


def test_tasks_backend_message_lost_in_the_background_is_sent_again_by_the_sweep(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with use_dispatcher(LossyDispatcher()) as lossy:
        assert isinstance(lossy, LossyDispatcher)
        lossy.broker.fail_next_request()
        result = tasks.add.enqueue(2, 3)
        assert dispatch.flush(10)
        assert lossy.broker.delivered == []  # lost: the run is committed, its message is not
        monkeypatch.setattr(run_sweep, "overdue_grace", lambda depth: 0.0)
        run_sweep.sweep_once()
    assert lossy.resent == [uuid.UUID(result.id)]
    execute(uuid.UUID(result.id))
    result.refresh()
    assert (result.status, result.return_value) == (TaskResultStatus.SUCCESSFUL, 5)


def test_tasks_backend_claim_reads_the_history_with_the_lease() -> None:
    run_id = uuid.UUID(tasks.flaky.enqueue(1).id)
    execute(run_id)  # attempt 1 fails: its retry is recorded, the run waits
    token = secrets.token_hex(16)
    found = claim_run_with_history(run_id, token, timezone.now())
    assert found is not None
    claimed, history = found
    assert claimed.workflow == Run.objects.get(id=run_id).workflow
    assert [(s.position, s.status, s.attempt) for s in history.values()] == [
        (p, st, a)
        for p, st, a in Step.objects.filter(run_id=run_id).values_list(
            "position", "status", "attempt"
        )
    ]
    assert len(history) == 1
    assert Run.objects.get(id=run_id).lease_token == token
    assert claim_run_with_history(run_id, "other", timezone.now()) is None  # leased


def test_tasks_backend_claim_inside_an_atomic_block_stays_in_it() -> None:
    run_id = uuid.UUID(tasks.add.enqueue(1, 1).id)
    with transaction.atomic():
        found = claim_run_with_history(run_id, "t", timezone.now())
        assert found is not None and found[1] == {}
        transaction.set_rollback(True)
    assert Run.objects.get(id=run_id).lease_token is None  # the caller's rollback undid it


def test_tasks_backend_step_completion_commits_with_the_run_end() -> None:
    run_id = uuid.UUID(tasks.add.enqueue(4, 5).id)
    execute(run_id)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT (SELECT xmin::text FROM {Run._meta.db_table} WHERE id = %s), "
            f"(SELECT xmin::text FROM {Step._meta.db_table} WHERE run_id = %s)",
            [run_id, run_id],
        )
        run_txn, step_txn = cursor.fetchone()
    assert run_txn == step_txn  # one transaction wrote the step's result and the run's end
