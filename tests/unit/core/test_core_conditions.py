"""Polling rules of wait_for_condition: delays, backoff, the cap and the deadline."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from runtime.core.conditions import PollTerms, met

T0 = datetime(2030, 1, 1, tzinfo=UTC)


def test_core_conditions_delay_grows_by_backoff_up_to_the_cap() -> None:
    terms = PollTerms.of(interval=1, backoff=2, max_interval=5)
    assert [terms.delay_after(n) for n in range(1, 6)] == [1.0, 2.0, 4.0, 5.0, 5.0]


def test_core_conditions_constant_interval_by_default() -> None:
    terms = PollTerms.of()
    assert [terms.delay_after(n) for n in (1, 2, 10)] == [5.0, 5.0, 5.0]


def test_core_conditions_last_poll_is_at_the_deadline_then_time_out() -> None:
    terms = PollTerms.of(interval=10, timeout=25)
    assert terms.next_poll(T0, 1, T0) == T0 + timedelta(seconds=10)
    assert terms.next_poll(T0, 3, T0 + timedelta(seconds=20)) == T0 + timedelta(seconds=25)
    assert terms.next_poll(T0, 4, T0 + timedelta(seconds=25)) is None


def test_core_conditions_timedelta_terms_are_seconds() -> None:
    terms = PollTerms.of(interval=timedelta(minutes=1), timeout=timedelta(hours=1))
    assert (terms.interval, terms.timeout) == (60.0, 3600.0)


@pytest.mark.parametrize(
    "bad",
    [{"interval": -1}, {"backoff": 0.5}, {"backoff": True}, {"timeout": "soon"},
     {"max_interval": -2}, {"interval": None}],
)  # fmt: skip
def test_core_conditions_bad_terms_are_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        PollTerms.of(**bad)


@pytest.mark.parametrize("value", [0, "", [], {}, 0.0, True, "ready"])
def test_core_conditions_anything_but_none_and_false_is_met(value: object) -> None:
    assert met(value)


def test_core_conditions_none_and_false_are_not_met() -> None:
    assert not met(None)
    assert not met(False)
