"""Run ends committed together (runtime.durable.run_ends): what follows an end runs only once
it is committed; a failed end goes to on_failure, the others still settle, and the first
error on_failure raised comes out once every end was waited for."""

from __future__ import annotations

import uuid
from typing import Any, cast

import pytest

from runtime.checkpoint.errors import CheckpointFailed
from runtime.checkpoint.writer import CheckpointWriter
from runtime.durable import run_ends
from runtime.durable.session import ExecutionSession


class BarrierWriter:
    """Stands for the checkpoint writer: barriers of the `failing` sessions raise."""

    def __init__(self, failing: set[str]) -> None:
        self.failing = failing
        self.waited: list[str] = []

    def barrier(self, session: str) -> None:
        self.waited.append(session)
        if session in self.failing:
            raise CheckpointFailed(session)


def _session(writer: BarrierWriter) -> ExecutionSession:
    return ExecutionSession(uuid.uuid4(), "token", 0, cast(CheckpointWriter, writer))


def test_run_ends_what_follows_an_end_waits_for_its_commit() -> None:
    writer = BarrierWriter(set())
    first, second = _session(writer), _session(writer)
    done: list[str] = []
    with run_ends.together(lambda session, failure: None) as ends:
        assert run_ends.current() is ends
        ends.queued(first, lambda: done.append("first woken"))
        ends.after(first.run_id, lambda: done.append("first's slot freed"))
        ends.queued(second, lambda: done.append("second woken"))
        assert done == [] and writer.waited == []  # nothing waited inside the block
    assert run_ends.current() is None
    assert writer.waited == [first.key, second.key]
    assert done == ["first woken", "first's slot freed", "second woken"]


def test_run_ends_a_failed_end_goes_to_on_failure_and_the_rest_settle() -> None:
    writer = BarrierWriter(set())
    lost, kept, broken = _session(writer), _session(writer), _session(writer)
    writer.failing = {lost.key, broken.key}
    failures: list[tuple[uuid.UUID, Any]] = []

    def on_failure(session: ExecutionSession, failure: Exception) -> None:
        failures.append((session.run_id, failure))
        if session is broken:
            raise RuntimeError("the database failed")  # as executor._aborted re-raises it

    done: list[uuid.UUID] = []
    with (
        pytest.raises(RuntimeError, match="the database failed"),
        run_ends.together(on_failure) as ends,
    ):
        for session in (lost, broken, kept):
            ends.queued(session, lambda s=session: done.append(s.run_id))
    assert [run_id for run_id, _ in failures] == [lost.run_id, broken.run_id]
    assert all(isinstance(failure, CheckpointFailed) for _, failure in failures)
    assert done == [kept.run_id]  # the failed ends' followers never ran
