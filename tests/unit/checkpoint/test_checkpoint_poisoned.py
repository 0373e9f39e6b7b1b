"""PoisonedSessions: the poisoned-session registry."""

from __future__ import annotations

import pytest

from runtime.checkpoint import CheckpointFailed
from runtime.checkpoint.poisoned import PoisonedSessions


def test_session_failures_keep_the_first_cause() -> None:
    failures = PoisonedSessions()
    first, second = ValueError("first"), ValueError("second")

    failures.poison("run", first)
    failures.poison("run", second)

    with pytest.raises(CheckpointFailed) as raised:
        failures.raise_if_poisoned("run")
    assert raised.value.__cause__ is first


def test_session_failures_forget_the_oldest_past_the_bound() -> None:
    failures = PoisonedSessions(max_sessions=2)
    for session in ["a", "b", "c"]:
        failures.poison(session, ValueError(session))

    assert failures.cause("a") is None
    assert failures.cause("b") is not None and failures.cause("c") is not None
