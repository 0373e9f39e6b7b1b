"""Attacks through idempotency keys: another user's key, and the runtime's own child keys.

A key is scoped to its owner and workflow, so bob's start with alice's key is bob's own new
run; the keys the runtime makes (`ff-child:<parent>:<position>`, schedule ticks) are refused
to callers, so bob cannot plant runs where alice's fan-out looks for its children.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import api_flows  # noqa: F401  (registers the workflows)
import pytest
from api_security import client_of, start, users

from runtime.core.errors import IdempotencyConflict, ReservedIdempotencyKey
from runtime.core.identity import child_run_key, child_run_key_prefix
from runtime.executor import execute
from runtime.models import Run
from runtime.services import start_run
from runtime.testing import InMemoryDispatcher, use_dispatcher


@pytest.fixture
def dispatcher() -> Iterator[InMemoryDispatcher]:
    with use_dispatcher(InMemoryDispatcher()) as sent:
        assert isinstance(sent, InMemoryDispatcher)
        yield sent


def test_api_security_anothers_idempotency_key_starts_ones_own_run(enqueued: list) -> None:
    alice, bob = users()
    first = start(client_of(alice), "tests.api.double", 5, idempotency_key="order-17")
    again = start(client_of(alice), "tests.api.double", 5, idempotency_key="order-17")
    stolen = start(client_of(bob), "tests.api.double", 6, idempotency_key="order-17")
    assert (first.status_code, again.status_code, stolen.status_code) == (201, 200, 201)
    assert again.json()["id"] == first.json()["id"]
    assert stolen.json()["id"] != first.json()["id"]
    assert stolen.json()["args"] == [6]  # bob's own run, never a view of alice's
    assert Run.objects.get(id=stolen.json()["id"]).owner_id == bob.pk
    assert Run.objects.get(id=first.json()["id"]).args == [5]


def test_api_security_keys_are_scoped_to_the_workflow_and_conflicts_are_typed() -> None:
    alice, _ = users()
    run, _ = start_run("tests.api.double", [1], idempotency_key="k", owner=alice)
    other, created = start_run("tests.api.sleeper", [], idempotency_key="k", owner=alice)
    assert created and other.id != run.id
    with pytest.raises(IdempotencyConflict):
        start_run("tests.api.double", [2], idempotency_key="k", owner=alice)
    with pytest.raises(ReservedIdempotencyKey):
        start_run("tests.api.double", [2], idempotency_key=child_run_key(run.id, 1))


def test_api_security_child_keys_cannot_be_taken_by_another_user(
    dispatcher: InMemoryDispatcher,
) -> None:
    alice, bob = users()
    parent = start(client_of(alice), "examples.map_children", 8)
    assert parent.status_code == 201
    parent_id = uuid.UUID(parent.json()["id"])
    execute(parent_id)  # the fan-out is published: its child branches wait in the queue
    _squat(client_of(bob), parent_id)
    # Even runs planted past the API (Python code may use any key) are bob's, not alice's
    # children: a child is found by its owner's key.
    for position in range(1, 10):
        key = child_run_key(parent_id, position)
        start_run("examples.square_later", [1000], runtime_key=key, owner=bob)
    dispatcher.join(timeout=60)
    run = Run.objects.get(id=parent_id)
    assert run.status == "completed"
    assert run.result == [n * n for n in range(1, 9)]
    children = Run.objects.filter(idempotency_key__startswith=child_run_key_prefix(parent_id))
    assert children.filter(owner=alice).count() == 8
    assert sorted(children.filter(owner=alice).values_list("result", flat=True)) == [
        n * n for n in range(1, 9)
    ]


def _squat(bob_api: Any, parent_id: uuid.UUID) -> None:
    for position in range(1, 10):
        key = child_run_key(parent_id, position)
        refused = start(bob_api, "examples.square_later", 1000, idempotency_key=key)
        assert refused.status_code == 400, refused.content
        assert refused.json()["error"]["code"] == "reserved_idempotency_key"
