"""`DurableCall`: a call answers from the history it matches, else records its row and events
(`step_created` first where the position is new), and a mismatch stays sticky."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from runtime.checkpoint.memory import MemorySink
from runtime.checkpoint.writer import CheckpointWriter
from runtime.core.clock import FakeClock
from runtime.core.errors import NonDeterminismError
from runtime.core.history import RecordedStep
from runtime.core.states import EventType, StepKind, StepStatus
from runtime.core.writes import HistoryWrite
from runtime.durable.calls import DurableCall, record_value
from runtime.durable.cursor import ReplayCursor
from runtime.durable.session import ExecutionSession

NOW = datetime(2030, 1, 1, tzinfo=UTC)


@pytest.fixture
def sink() -> MemorySink:
    return MemorySink()


@pytest.fixture
def writer(sink: MemorySink) -> Iterator[CheckpointWriter]:
    w = CheckpointWriter(sink)
    yield w
    w.close()


def _cursor(writer: CheckpointWriter, *records: RecordedStep) -> ReplayCursor:
    session = ExecutionSession(uuid.uuid4(), "token", 0, writer)
    return ReplayCursor(session, {r.position: r for r in records}, FakeClock(NOW), 1 << 20)


def _written(cursor: ReplayCursor, sink: MemorySink) -> list[HistoryWrite]:
    cursor.session.barrier()
    return [cp.payload for cp in sink.checkpoints if isinstance(cp.payload, HistoryWrite)]


def test_durable_call_records_a_new_position_with_step_created_first(
    writer: CheckpointWriter, sink: MemorySink
) -> None:
    cursor = _cursor(writer)
    assert record_value(cursor, "ctx.random", lambda: 0.25) == 0.25

    [write] = _written(cursor, sink)
    assert [e.type for e in write.events] == [EventType.STEP_CREATED, EventType.STEP_COMPLETED]
    assert write.events[1].payload == {"attempt": 1, "result": 0.25}
    [row] = write.steps
    assert (row.position, row.name, row.kind, row.status, row.result) == (
        1, "ctx.random", "step", StepStatus.COMPLETED, 0.25
    )  # fmt: skip
    assert row.started_at == row.finished_at == row.created_at == NOW
    assert cursor.recorded(1) == RecordedStep.of(row)


def test_durable_call_answers_from_the_history_and_writes_nothing(
    writer: CheckpointWriter, sink: MemorySink
) -> None:
    cursor = _cursor(writer, RecordedStep(1, "ctx.random", "step", "completed", 1, 0.5))
    assert record_value(cursor, "ctx.random", lambda: pytest.fail("produced again")) == 0.5
    assert _written(cursor, sink) == []


def test_durable_call_on_a_recorded_wait_records_no_second_step_created(
    writer: CheckpointWriter, sink: MemorySink
) -> None:
    began = datetime(2029, 12, 31, tzinfo=UTC)
    waiting = RecordedStep(1, "orders", StepKind.MESSAGE, "running", 1, started_at=began)
    cursor = _cursor(writer, waiting)
    call = DurableCall(cursor, 1, "orders", StepKind.MESSAGE, {"topic": "orders"})
    call.finish(StepStatus.COMPLETED, call.event(EventType.MESSAGE_RECEIVED, {}), result=7)

    [write] = _written(cursor, sink)
    assert [e.type for e in write.events] == [EventType.MESSAGE_RECEIVED]
    assert (write.steps[0].started_at, write.steps[0].finished_at) == (began, NOW)


def test_durable_call_mismatch_is_sticky(writer: CheckpointWriter) -> None:
    cursor = _cursor(writer, RecordedStep(1, "charge", "step", "completed", 1, 1))
    with pytest.raises(NonDeterminismError):
        DurableCall(cursor, 1, "charge", StepKind.CALLBACK)
    with pytest.raises(NonDeterminismError):
        cursor.next_position()  # user code that caught it cannot go on
