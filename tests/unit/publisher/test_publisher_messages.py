"""Messages, routings and outcomes: validation, hashing, pickling."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from publisher.messages import Message, Outcome, Routing


def test_routing_is_a_hashable_group_key() -> None:
    assert len({Routing("q", 5), Routing("q", 5), Routing("q")}) == 2


def test_message_stores_tuple_args_as_a_list() -> None:
    assert Message("t", "k", args=(1, 2)).args == [1, 2]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"task": "", "idempotency_key": "k"}, ValueError),
        ({"task": "t", "idempotency_key": ""}, ValueError),
        ({"task": "t", "idempotency_key": "k", "args": "abc"}, TypeError),
        ({"task": "t", "idempotency_key": "k", "kwargs": {1: "x"}}, TypeError),
        ({"task": "t", "idempotency_key": "k", "headers": []}, TypeError),
    ],
)
def test_message_rejects_malformed_fields(fields: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        Message(**fields)


def test_outcome_kinds_and_pickling() -> None:
    outcomes = [Outcome.sent("id"), Outcome.deferred(), Outcome.failure("x", retryable=True)]

    assert [o.ok for o in outcomes] == [True, True, False]
    assert pickle.loads(pickle.dumps(outcomes)) == outcomes
