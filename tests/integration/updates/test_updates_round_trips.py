"""What accepting an update costs on PostgreSQL: one statement (the run locked, the update
inserted, the run woken and notified), unflushed only when asked; a repeated id and a finished
run write nothing."""

from __future__ import annotations

import uuid

import update_flows  # noqa: F401  (registers the workflows)

from runtime import start
from runtime.models import Run, RunStatus, RunUpdate
from runtime.store.messaging.updates import answer_and_run, insert_update, run_state
from runtime.testing import InMemoryDispatcher
from tests.support.statements import statements_sent


def _waiting_cart(runs: InMemoryDispatcher) -> uuid.UUID:
    run = start("tests.upd.cart", f"c-{uuid.uuid4().hex[:6]}")
    runs.join()
    assert Run.objects.get(id=run.id).status == RunStatus.WAITING
    return run.id


def test_an_update_is_accepted_in_one_statement(runs: InMemoryDispatcher) -> None:
    rid = _waiting_cart(runs)
    before = Run.objects.get(id=rid).wakeups
    woken: list[tuple[uuid.UUID, int]] = []

    with statements_sent() as sent:
        row, created = insert_update(
            rid, "u-1", "add_item", {"sku": "A1"}, by=None,
            enqueue=lambda run_id, priority, _: woken.append((run_id, priority)), flush=False,
        )  # fmt: skip

    assert created and row.id == "u-1" and row.status == "pending"
    assert [prepared for _, prepared in sent] == [True]  # one statement, prepared
    assert "synchronous_commit" in sent[0][0]
    assert woken == [(rid, 0)]  # a waiting run is sent to a worker
    after = Run.objects.get(id=rid)
    assert after.wakeups == before + 1 and after.wake_at is not None
    stored = RunUpdate.objects.get(run_id=rid, update_id="u-1")
    assert (stored.name, stored.payload, stored.status) == ("add_item", {"sku": "A1"}, "pending")


def test_a_repeated_update_id_and_a_finished_run_write_nothing(runs: InMemoryDispatcher) -> None:
    rid = _waiting_cart(runs)
    woken: list[tuple[uuid.UUID, int]] = []

    def accept(flush: bool) -> tuple[object, bool]:
        return insert_update(
            rid, "u-1", "add_item", {"sku": "A1"}, by=None,
            enqueue=lambda run_id, priority, _: woken.append((run_id, priority)), flush=flush,
        )  # fmt: skip

    with statements_sent() as sent:
        accept(flush=True)
    assert "synchronous_commit" not in sent[0][0]
    wakeups = Run.objects.get(id=rid).wakeups
    _, created = accept(flush=True)
    assert not created and len(woken) == 1
    assert Run.objects.get(id=rid).wakeups == wakeups  # not woken again
    Run.objects.filter(id=rid).update(status=RunStatus.COMPLETED)
    _, created = accept(flush=True)  # the same id once finished: the first update, again
    assert not created and RunUpdate.objects.filter(run_id=rid).count() == 1


def test_a_caller_reads_the_run_and_the_answer_in_one_prepared_statement_each(
    runs: InMemoryDispatcher,
) -> None:
    rid = _waiting_cart(runs)
    insert_update(rid, "u-1", "add_item", {"sku": "A1"}, by={"user": "ops"},
                  enqueue=lambda run_id, priority, _: None, flush=True)  # fmt: skip
    with statements_sent() as sent:
        state = run_state(rid)
        found = answer_and_run(rid, "u-1")
        missing = answer_and_run(rid, "u-2")
    assert [prepared for _, prepared in sent] == [True, True, True]
    assert state is not None and (state.workflow, state.status) == ("tests.upd.cart", "waiting")
    assert found is not None and missing is None
    row, run = found
    assert (row.id, row.name, row.payload, row.status, row.by) == (
        "u-1",
        "add_item",
        {"sku": "A1"},
        "pending",
        {"user": "ops"},
    )
    assert (run.workflow, run.status, run.error) == ("tests.upd.cart", "waiting", None)
