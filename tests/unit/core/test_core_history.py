"""Replay rules of runtime.core.history: what a durable call does given its recorded step."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime.core import history as h
from runtime.core.errors import NonDeterminismError
from runtime.core.states import StepStatus

NOW = datetime(2030, 1, 1, tzinfo=UTC)
STATUSES = list(StepStatus)

names = st.sampled_from(["load", "charge", "mail", "ctx.now", "sleep"])
json_results = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=6,
)
wake_times = st.none() | st.integers(min_value=-3600, max_value=3600).map(
    lambda s: NOW + timedelta(seconds=s)
)
recorded_steps = st.builds(
    h.RecordedStep,
    position=st.integers(min_value=1, max_value=1000),
    name=names,
    kind=st.sampled_from(["step", "sleep"]),
    status=st.sampled_from(STATUSES),
    attempt=st.integers(min_value=0, max_value=10),
    result=json_results,
    error=st.none()
    | st.fixed_dictionaries({"type": st.just("ValueError"), "message": st.text(max_size=5)}),
    wake_at=wake_times,
)


def expected_step_action(recorded: h.RecordedStep, now: datetime, at_most_once: bool) -> Any:
    """An independent statement of the step replay rules (CONTRACT section 1)."""
    if recorded.status == StepStatus.COMPLETED:
        return h.ReturnRecorded(recorded.result)
    if recorded.status in (StepStatus.FAILED, StepStatus.CANCELLED):
        return h.RaiseRecorded(recorded.error)
    if recorded.status == StepStatus.PENDING:
        if recorded.wake_at is not None and recorded.wake_at > now:
            return h.WaitUntil(recorded.wake_at)
        return h.RunAttempt(recorded.attempt + 1, fresh=recorded.attempt == 0)
    if at_most_once:
        return h.Interrupted(recorded.attempt)
    return h.RunAttempt(recorded.attempt + 1, fresh=False)


@given(recorded=recorded_steps, at_most_once=st.booleans())
def test_history_step_action_follows_the_replay_rules(
    recorded: h.RecordedStep, at_most_once: bool
) -> None:
    if recorded.kind != "step":
        with pytest.raises(NonDeterminismError):
            h.next_step_action(recorded, recorded.name, NOW, at_most_once=at_most_once)
        return
    action = h.next_step_action(recorded, recorded.name, NOW, at_most_once=at_most_once)
    assert action == expected_step_action(recorded, NOW, at_most_once)
    # Pure: asking again gives the same answer.
    assert h.next_step_action(recorded, recorded.name, NOW, at_most_once=at_most_once) == action


@given(recorded=recorded_steps, other=names, at_most_once=st.booleans())
def test_history_step_action_rejects_another_name_at_a_recorded_position(
    recorded: h.RecordedStep, other: str, at_most_once: bool
) -> None:
    if other == recorded.name and recorded.kind == "step":
        return
    with pytest.raises(NonDeterminismError) as info:
        h.next_step_action(recorded, other, NOW, at_most_once=at_most_once)
    message = str(info.value)
    assert f"position {recorded.position}" in message
    assert repr(recorded.name) in message and repr(other) in message


@given(
    history=st.lists(st.tuples(names, json_results), min_size=1, max_size=30),
    at_most_once=st.booleans(),
)
def test_history_replay_of_the_same_calls_returns_every_recorded_result(
    history: list[tuple[str, Any]], at_most_once: bool
) -> None:
    recorded = {
        pos: h.RecordedStep(pos, name, "step", StepStatus.COMPLETED, 1, result)
        for pos, (name, result) in enumerate(history, start=1)
    }
    for pos, (name, result) in enumerate(history, start=1):
        action = h.next_step_action(recorded[pos], name, NOW, at_most_once=at_most_once)
        assert action == h.ReturnRecorded(result)
    # The first call past the recorded history runs fresh.
    assert h.next_step_action(None, "next", NOW, at_most_once=at_most_once) == h.RunAttempt(1, True)


@given(
    history=st.lists(names, min_size=1, max_size=30),
    changed_at=st.integers(min_value=0, max_value=29),
    replacement=names,
)
def test_history_replay_with_a_changed_call_fails_exactly_at_the_change(
    history: list[str], changed_at: int, replacement: str
) -> None:
    changed_at %= len(history)
    if history[changed_at] == replacement:
        return
    recorded = {
        pos: h.RecordedStep(pos, name, "step", StepStatus.COMPLETED, 1, pos)
        for pos, name in enumerate(history, start=1)
    }
    replayed = list(history)
    replayed[changed_at] = replacement
    for pos, name in enumerate(replayed, start=1):
        if pos - 1 == changed_at:
            with pytest.raises(NonDeterminismError):
                h.next_step_action(recorded[pos], name, NOW, at_most_once=False)
            return
        assert h.next_step_action(recorded[pos], name, NOW, at_most_once=False) == h.ReturnRecorded(
            pos
        )
    pytest.fail("the changed position was never reached")


def test_history_step_action_runs_a_fresh_first_attempt_when_nothing_is_recorded() -> None:
    assert h.next_step_action(None, "a", NOW, at_most_once=True) == h.RunAttempt(1, fresh=True)


def test_history_step_action_treats_a_step_recorded_as_sleep_as_nondeterminism() -> None:
    recorded = h.RecordedStep(3, "sleep", "sleep", StepStatus.COMPLETED, 1)
    with pytest.raises(NonDeterminismError, match="sleep 'sleep'"):
        h.next_step_action(recorded, "sleep", NOW, at_most_once=False)


@pytest.mark.parametrize(
    ("wake_offset", "expected"),
    [
        (timedelta(seconds=1), "wait"),
        (timedelta(0), "fire"),
        (timedelta(seconds=-1), "fire"),
        (None, "fire"),
    ],
)
def test_history_pending_retry_waits_until_its_wake_time(
    wake_offset: timedelta | None, expected: str
) -> None:
    wake_at = None if wake_offset is None else NOW + wake_offset
    recorded = h.RecordedStep(1, "a", "step", StepStatus.PENDING, attempt=2, wake_at=wake_at)
    action = h.next_step_action(recorded, "a", NOW, at_most_once=False)
    if expected == "wait":
        assert action == h.WaitUntil(NOW + timedelta(seconds=1))
    else:
        assert action == h.RunAttempt(3, fresh=False)


def test_history_interrupted_attempt_is_rerun_only_when_at_least_once() -> None:
    recorded = h.RecordedStep(1, "a", "step", StepStatus.RUNNING, attempt=2)
    assert h.next_step_action(recorded, "a", NOW, at_most_once=False) == h.RunAttempt(3, False)
    assert h.next_step_action(recorded, "a", NOW, at_most_once=True) == h.Interrupted(2)


@given(status=st.sampled_from(STATUSES), wake_at=wake_times)
def test_history_sleep_action_follows_the_timer_rules(
    status: str, wake_at: datetime | None
) -> None:
    recorded = h.RecordedStep(2, "sleep", "sleep", status, 1, error={"type": "X"}, wake_at=wake_at)
    action = h.next_sleep_action(recorded, "sleep", NOW)
    if status == StepStatus.COMPLETED:
        assert action == h.ReturnRecorded(None)
    elif status in (StepStatus.FAILED, StepStatus.CANCELLED):
        assert action == h.RaiseRecorded({"type": "X"})
    elif wake_at is not None and wake_at > NOW:
        assert action == h.WaitUntil(wake_at)
    else:
        assert action == h.TimerFired()


def test_history_sleep_action_starts_a_timer_when_nothing_is_recorded() -> None:
    assert h.next_sleep_action(None, "sleep", NOW) == h.RunAttempt(1, fresh=True)


def test_history_sleep_action_rejects_a_step_recorded_at_its_position() -> None:
    recorded = h.RecordedStep(2, "charge", "step", StepStatus.COMPLETED, 1, result=5)
    with pytest.raises(NonDeterminismError, match="step 'charge'"):
        h.next_sleep_action(recorded, "sleep", NOW)


def test_history_interrupted_last_attempt_of_at_least_once_step_is_not_run_again() -> None:
    from datetime import UTC, datetime

    from runtime.core import history as hist

    now = datetime(2030, 1, 1, tzinfo=UTC)
    crashed = hist.RecordedStep(1, "s", "step", StepStatus.RUNNING, attempt=3)
    assert hist.next_step_action(
        crashed, "s", now, at_most_once=False, max_attempts=3
    ) == hist.Interrupted(3)
    assert hist.next_step_action(
        crashed, "s", now, at_most_once=False, max_attempts=4
    ) == hist.RunAttempt(attempt=4, fresh=False)
