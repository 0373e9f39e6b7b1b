"""Retry decisions of runtime.core.retry and the retry-related errors."""

from __future__ import annotations

import pickle
from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime.core.errors import FatalError, PayloadError, PayloadTooLarge, RetryableError
from runtime.core.retry import DEFAULT_POLICY, GiveUp, Retry, RetryPolicy, decide


def test_retry_default_policy_matches_the_contract() -> None:
    assert (
        RetryPolicy(max_attempts=3, initial_delay=1.0, backoff=2.0, max_delay=60.0, jitter=True)
        == DEFAULT_POLICY
    )
    assert DEFAULT_POLICY.retry_on == (Exception,)


def test_retry_base_delay_backs_off_and_is_capped() -> None:
    policy = RetryPolicy(max_attempts=10, initial_delay=2.0, backoff=3.0, max_delay=60.0)
    assert [policy.base_delay(n) for n in range(1, 7)] == [2.0, 6.0, 18.0, 54.0, 60.0, 60.0]


def test_retry_without_jitter_uses_exact_delays_until_attempts_run_out() -> None:
    policy = RetryPolicy(
        max_attempts=4, initial_delay=0.5, backoff=2.0, max_delay=1.5, jitter=False
    )
    decisions = [decide(policy, n, ValueError("x"), rand=lambda: 0.0) for n in range(1, 5)]
    assert decisions[:3] == [Retry(0.5), Retry(1.0), Retry(1.5)]
    assert isinstance(decisions[3], GiveUp)
    assert "4 of 4" in decisions[3].reason


@given(
    attempt=st.integers(min_value=1, max_value=20),
    fraction=st.floats(min_value=0.0, max_value=1.0, exclude_max=True),
    initial=st.floats(min_value=0.0, max_value=100.0),
    backoff=st.floats(min_value=1.0, max_value=5.0),
    cap=st.floats(min_value=0.0, max_value=300.0),
)
def test_retry_full_jitter_stays_within_zero_and_the_capped_delay(
    attempt: int, fraction: float, initial: float, backoff: float, cap: float
) -> None:
    policy = RetryPolicy(
        max_attempts=21, initial_delay=initial, backoff=backoff, max_delay=cap, jitter=True
    )
    decision = decide(policy, attempt, RuntimeError("boom"), rand=lambda: fraction)
    assert isinstance(decision, Retry)
    assert 0.0 <= decision.delay <= policy.base_delay(attempt) <= cap
    assert decision.delay == pytest.approx(policy.base_delay(attempt) * fraction)


def test_retry_jitter_uses_the_injected_random_source() -> None:
    policy = RetryPolicy(initial_delay=10.0, jitter=True)
    assert decide(policy, 1, ValueError(), rand=lambda: 0.25) == Retry(2.5)
    assert decide(policy, 1, ValueError(), rand=lambda: 0.75) == Retry(7.5)


@pytest.mark.parametrize("exc", [FatalError("no"), PayloadError("bad"), PayloadTooLarge("big")])
def test_retry_fatal_and_payload_errors_give_up_on_the_first_attempt(exc: Exception) -> None:
    policy = RetryPolicy(max_attempts=10, retry_on=(Exception,))
    assert decide(policy, 1, exc) == GiveUp("fatal error")


def test_retry_on_limits_retries_to_the_listed_types() -> None:
    policy = RetryPolicy(max_attempts=5, jitter=False, retry_on=(ConnectionError,))
    assert decide(policy, 1, ConnectionResetError()) == Retry(1.0)  # a subclass retries
    gave_up = decide(policy, 1, KeyError("k"))
    assert isinstance(gave_up, GiveUp)
    assert "KeyError is not in retry_on" in gave_up.reason


def test_retry_retryable_error_retries_even_outside_retry_on() -> None:
    policy = RetryPolicy(max_attempts=5, jitter=False, retry_on=(ConnectionError,))
    assert decide(policy, 2, RetryableError("busy")) == Retry(2.0)


def test_retry_retry_after_sets_the_delay_exactly() -> None:
    policy = RetryPolicy(max_attempts=5, initial_delay=1.0, max_delay=10.0, jitter=True)
    assert decide(policy, 1, RetryableError("busy", retry_after=7), rand=lambda: 0.0) == Retry(7.0)
    later = RetryableError("busy", retry_after=timedelta(minutes=2))
    assert decide(policy, 3, later, rand=lambda: 0.0) == Retry(120.0)


def test_retry_retry_after_does_not_extend_max_attempts() -> None:
    policy = RetryPolicy(max_attempts=2)
    assert isinstance(decide(policy, 2, RetryableError("busy", retry_after=1)), GiveUp)


def test_retry_retryable_error_rejects_a_negative_or_odd_retry_after() -> None:
    with pytest.raises(ValueError):
        RetryableError("x", retry_after=-1)
    with pytest.raises(ValueError):
        RetryableError("x", retry_after="soon")
    assert RetryableError("x").retry_after is None
    assert RetryableError("x", retry_after=timedelta(milliseconds=1500)).retry_after == 1.5


def test_retry_retryable_error_keeps_retry_after_across_pickling() -> None:
    copy = pickle.loads(pickle.dumps(RetryableError("busy", retry_after=3)))
    assert isinstance(copy, RetryableError)
    assert (copy.message, copy.retry_after, copy.code) == ("busy", 3.0, "retryable")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_attempts": 0},
        {"max_attempts": 1.5},
        {"initial_delay": -1},
        {"max_delay": -1},
        {"backoff": 0.5},
        {"retry_on": [ValueError]},
        {"retry_on": (ValueError, "TypeError")},
    ],
)
def test_retry_policy_rejects_bad_values(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        RetryPolicy(**kwargs)  # type: ignore[arg-type]


def test_retry_policy_accepts_timedelta_delays() -> None:
    policy = RetryPolicy(initial_delay=timedelta(seconds=3), max_delay=timedelta(minutes=1))  # type: ignore[arg-type]
    assert (policy.initial_delay, policy.max_delay) == (3.0, 60.0)
