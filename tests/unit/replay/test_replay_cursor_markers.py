"""The replay cursor's patch markers: answers from the history, markers stepped over."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, cast

from runtime.core.clock import FakeClock
from runtime.core.history import RecordedStep
from runtime.core.states import StepKind
from runtime.durable.cursor import ReplayCursor
from runtime.durable.session import ExecutionSession


def _cursor(*records: tuple[str, str]) -> ReplayCursor:
    history = {
        i: RecordedStep(i, name, kind, "completed", 1, True if kind == StepKind.MARKER else name)
        for i, (kind, name) in enumerate(records, start=1)
    }
    session = ExecutionSession(uuid.uuid4(), "token", 0, cast(Any, None))
    return ReplayCursor(session, history, FakeClock(datetime(2030, 1, 1, tzinfo=UTC)), 1 << 20)


def test_replay_cursor_patch_answer_reads_the_recorded_marker() -> None:
    cursor = _cursor(("step", "a"), (StepKind.MARKER, "p"), ("step", "c"))
    assert cursor.next_position() == 1
    assert cursor.patch_answer("p") is True
    assert cursor.next_position() == 3  # the marker is not a step's position


def test_replay_cursor_patch_answer_is_false_where_the_history_went_on_without_it() -> None:
    cursor = _cursor(("step", "a"), ("step", "b"))
    cursor.next_position()
    assert cursor.patch_answer("p") is False
    assert cursor.next_position() == 2  # a False answer takes no position


def test_replay_cursor_patch_answer_is_none_at_the_frontier() -> None:
    cursor = _cursor(("step", "a"))
    cursor.next_position()
    assert cursor.patch_answer("p") is None


def test_replay_cursor_steps_over_markers_nobody_asks_for() -> None:
    cursor = _cursor((StepKind.MARKER, "old"), (StepKind.MARKER, "p"), ("step", "a"))
    assert cursor.patch_answer("p") is True  # found behind another patch's marker
    assert cursor.next_position() == 3


def test_replay_cursor_patch_answer_of_another_patch_behind_markers_is_false() -> None:
    cursor = _cursor((StepKind.MARKER, "old"), ("step", "a"))
    assert cursor.patch_answer("p") is False
