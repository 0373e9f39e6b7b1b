"""The pure callback rules: deadlines, heartbeats and what wait() does."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime.core import history
from runtime.core.callbacks import (
    AwaitPost,
    CallbackTerms,
    RaiseTimedOut,
    TimeOut,
    as_seconds,
    next_wait_action,
    timed_out_error,
)
from runtime.core.states import StepStatus

T0 = datetime(2030, 1, 1, tzinfo=UTC)


def recorded(status: str = StepStatus.RUNNING, **fields: object) -> history.RecordedStep:
    return history.RecordedStep(1, "cb", "callback", status, 1, started_at=T0, **fields)  # type: ignore[arg-type]


def test_callback_terms_accept_seconds_timedeltas_and_none() -> None:
    terms = CallbackTerms.of(timedelta(minutes=2), 5)
    assert terms == CallbackTerms(120.0, 5.0)
    assert CallbackTerms.from_input(terms.as_input()) == terms
    assert CallbackTerms.of(None, None).first_deadline(T0) is None


@pytest.mark.parametrize("bad", [-1, True, "10", float("nan"), timedelta(seconds=-1)])
def test_callback_terms_reject_bad_durations(bad: object) -> None:
    with pytest.raises(ValueError):
        as_seconds(bad, "timeout")  # type: ignore[arg-type]


def test_callback_first_deadline_is_the_nearer_one() -> None:
    assert CallbackTerms(100, 30).first_deadline(T0) == T0 + timedelta(seconds=30)
    assert CallbackTerms(10, 30).first_deadline(T0) == T0 + timedelta(seconds=10)
    assert CallbackTerms(None, 30).first_deadline(T0) == T0 + timedelta(seconds=30)


@given(
    timeout=st.floats(0, 10_000),
    beat_timeout=st.floats(0, 10_000),
    beat_after=st.floats(0, 20_000),
)
def test_callback_heartbeat_never_moves_deadline_past_timeout(
    timeout: float, beat_timeout: float, beat_after: float
) -> None:
    terms = CallbackTerms(timeout, beat_timeout)
    deadline = terms.deadline_after_heartbeat(T0, T0 + timedelta(seconds=beat_after))
    assert deadline is not None
    assert deadline <= T0 + timedelta(seconds=timeout)
    assert deadline <= T0 + timedelta(seconds=beat_after) + timedelta(seconds=beat_timeout)


def test_callback_wait_returns_recorded_result() -> None:
    action = next_wait_action(recorded(StepStatus.COMPLETED, result={"ok": 1}), CallbackTerms(), T0)
    assert action == history.ReturnRecorded({"ok": 1})


def test_callback_wait_reraises_posted_error_and_recorded_timeout() -> None:
    posted = {"type": "Rejected", "message": "no"}
    assert next_wait_action(
        recorded(StepStatus.FAILED, error=posted), CallbackTerms(), T0
    ) == history.RaiseRecorded(posted)
    timed_out = timed_out_error("cb", "timeout", T0)
    action = next_wait_action(recorded(StepStatus.FAILED, error=timed_out), CallbackTerms(), T0)
    assert isinstance(action, RaiseTimedOut)
    assert "timed out" in action.message


def test_callback_wait_suspends_until_deadline_or_indefinitely() -> None:
    deadline = T0 + timedelta(seconds=30)
    assert next_wait_action(recorded(wake_at=deadline), CallbackTerms(None, 30), T0) == AwaitPost(
        deadline
    )
    assert next_wait_action(recorded(), CallbackTerms(), T0 + timedelta(days=900)) == AwaitPost(
        None
    )


def test_callback_wait_times_out_and_names_the_deadline_it_hit() -> None:
    terms = CallbackTerms(100, 30)
    beat = next_wait_action(
        recorded(wake_at=T0 + timedelta(seconds=30)), terms, T0 + timedelta(seconds=30)
    )
    assert beat == TimeOut("heartbeat_timeout", T0 + timedelta(seconds=30))
    whole = next_wait_action(
        recorded(wake_at=T0 + timedelta(seconds=100)), terms, T0 + timedelta(seconds=101)
    )
    assert whole == TimeOut("timeout", T0 + timedelta(seconds=100))
