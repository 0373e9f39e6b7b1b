"""Starting a run: the service's transaction, one key lookup, the message after commit."""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

import pytest
from django.db import transaction

from runtime.models import Run
from runtime.services import start_run, starting
from tests.support.dispatch import Enqueued


def test_starting_returns_the_row_as_stored() -> None:
    run, created = start_run("examples.noop_loop", [3], idempotency_key="k-row", priority=4)
    stored = Run.objects.get(id=run.id)
    assert created
    for field in ("workflow", "input", "idempotency_key", "priority", "admitted", "last_seq"):
        assert getattr(run, field) == getattr(stored, field), field
    assert run.created_at == stored.created_at == stored.updated_at
    run.save(update_fields=["priority"])  # a saved row, not a new one


def test_starting_a_repeated_key_looks_it_up_once(monkeypatch: pytest.MonkeyPatch) -> None:
    first, _ = start_run("examples.noop_loop", [1], idempotency_key="k-once")
    lookups: list[str] = []
    real = starting.keyed_run

    def counted(owner_id: int | None, workflow: str, key: str) -> Run | None:
        lookups.append(key)
        return real(owner_id, workflow, key)

    monkeypatch.setattr(starting, "keyed_run", counted)
    again, created = start_run("examples.noop_loop", [1], idempotency_key="k-once")
    assert (again.id, created, lookups) == (first.id, False, ["k-once"])


@pytest.mark.parametrize("in_callers_transaction", [True, False])
def test_starting_a_key_lost_to_a_concurrent_start_returns_that_run(
    monkeypatch: pytest.MonkeyPatch, enqueued: Enqueued, in_callers_transaction: bool
) -> None:
    # The other start commits between this one's lookup and its insert: the insert hits the
    # key's unique constraint, and the start's second transaction finds the other run.
    other, _ = start_run("examples.noop_loop", [1], idempotency_key="k-race")
    real = starting.keyed_run
    answers: list[Run | None] = [None]

    def late(owner_id: int | None, workflow: str, key: str) -> Run | None:
        return answers.pop() if answers else real(owner_id, workflow, key)

    monkeypatch.setattr(starting, "keyed_run", late)
    sent = len(enqueued.calls)
    with transaction.atomic() if in_callers_transaction else nullcontext():
        found, created = start_run("examples.noop_loop", [1], idempotency_key="k-race")
        # The caller's transaction stays usable.
        assert Run.objects.filter(idempotency_key="k-race").count() == 1
    assert (found.id, created) == (other.id, False)
    assert len(enqueued.calls) == sent


@pytest.mark.parametrize("key", [None, "k-commit"])
def test_starting_sends_the_run_after_the_callers_commit(
    enqueued: Enqueued, key: str | None
) -> None:
    def start() -> Any:
        run, _ = start_run("examples.noop_loop", [1], idempotency_key=key)
        assert enqueued.count(run.id) == 0  # not before the caller's commit
        return run

    with transaction.atomic():
        run = start()
    assert enqueued.count(run.id) == 1


def test_starting_outside_a_transaction_sends_at_once(enqueued: Enqueued) -> None:
    run, _ = start_run("examples.noop_loop", [1])
    assert enqueued.count(run.id) == 1
    assert starting.start_run_soon("examples.noop_loop", [2]) in {r for r, _ in enqueued.calls}
