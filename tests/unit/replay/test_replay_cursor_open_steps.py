"""The replay cursor's open records, kept as records change: what a warm resume reads the history
from, and the open callbacks a pass looks at, without walking the whole history."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, cast

from runtime.core.clock import FakeClock
from runtime.core.history import RecordedStep
from runtime.durable.cursor import ReplayCursor
from runtime.durable.session import ExecutionSession


def _record(position: int, status: str, kind: str = "step") -> RecordedStep:
    return RecordedStep(position, f"s{position}", kind, status, 1, None)


def _cursor(*records: RecordedStep) -> ReplayCursor:
    session = ExecutionSession(uuid.uuid4(), "token", 0, cast(Any, None))
    history = {r.position: r for r in records}
    return ReplayCursor(session, history, FakeClock(datetime(2030, 1, 1, tzinfo=UTC)), 1 << 20)


def test_the_first_open_position_follows_the_records_as_they_finish_and_open() -> None:
    cursor = _cursor(_record(1, "completed"), _record(2, "running"), _record(3, "completed"))
    assert cursor.first_open_position() == 2
    cursor.remember(_record(2, "completed"))
    assert cursor.first_open_position() == 4  # none open: the one after the last record
    cursor.remember(_record(4, "pending", "callback"))
    cursor.remember(_record(5, "completed"))
    assert cursor.first_open_position() == 4
    assert [r.position for r in cursor.open_steps()] == [4]


def test_a_resumed_pass_takes_its_news_into_the_open_records_and_its_history() -> None:
    cursor = _cursor(_record(1, "completed"), _record(2, "pending", "callback"))
    cursor.remember(_record(3, "running"))  # written by the pass that parked
    assert not cursor.went_past_history and cursor.first_open_position() == 2

    news = [_record(2, "completed", "callback"), _record(3, "completed")]
    cursor.resume_pass(cursor.session, cursor.clock, news)

    assert cursor.open_steps() == [] and cursor.first_open_position() == 4
    assert [getattr(cursor.recorded(p), "status", None) for p in (1, 2, 3)] == ["completed"] * 3
    for _ in range(3):
        cursor.next_position()
    assert not cursor.is_replaying and not cursor.went_past_history  # 3 is now history
